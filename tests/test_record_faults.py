"""What a full disk, a short write, a crash while a run is made, a planted link or a bad path
does to a run: one `awf:` line, the right exit code, and a record every reader and a continue
still read the same way."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import AWF, Project, Result
from faults_support import Call, fits_its_schemas, inject, no_traceback, trace
from workflows import COUNTED


@pytest.fixture
def counted(project: Project) -> Project:
    project.write("counted.py", COUNTED)
    return project


def runs_of(project: Project, stage: str) -> int:
    side = project.path / "ran.txt"
    return side.read_text().splitlines().count(stage) if side.exists() else 0


def run_dir(project: Project, run_id: str = "r") -> Path:
    return project.run_dir("counted", run_id)


def stopped_at_b(project: Project) -> None:
    """Attempt 1 of run `r`: .x recorded, b stopped."""
    (project.path / "stop-b").touch()
    assert project.awf("run", "counted.py", "--id", "r").code == 3
    (project.path / "stop-b").unlink()


def awf_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("awf: ")]


def readers_agree(project: Project, run_id: str = "r") -> None:
    for argv in (["runs"], ["runs", f"counted/{run_id}"], ["logs", f"counted/{run_id}"]):
        read = project.awf(*argv)
        assert read.code == 0 and no_traceback(read), (argv, read.stderr)


def test_a_write_cut_short_by_a_file_size_limit_is_cut_back_and_the_attempt_ends_with_one_awf_line(counted: Project):
    stopped_at_b(counted)
    log = run_dir(counted) / "run.jsonl"
    before = log.read_bytes()

    def limit() -> None:
        # The kernel writes up to the limit and returns a short count; the next write fails.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 40, len(before) + 40))

    done = subprocess.run(
        [*AWF, "run", "counted.py", "--id", "r", "--continue"],
        cwd=counted.path,
        env=counted.env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    awf_said = [line for line in done.stderr.splitlines() if line.startswith("awf: ")]
    assert len(awf_said) == 1 and f"{log}: cannot be written: file too large" in awf_said[0]
    assert log.read_bytes() == before, "the half line is cut back off"
    readers_agree(counted)
    again = counted.awf("run", "counted.py", "--id", "r", "--continue")
    assert again.code == 0, again.stderr
    assert [runs_of(counted, stage) for stage in (".x", "b", "c")] == [1, 2, 1]


def traced(project: Project, argv: list[str], tmp_path: Path) -> list[Call]:
    """The write calls of `argv` run once, with the project put back as it was after."""
    saved = Path(tempfile.mkdtemp())
    kept = [name for name in (".awf", "ran.txt") if (project.path / name).exists()]
    for name in kept:
        shutil.copytree(project.path / name, saved / name, symlinks=True) if name == ".awf" else shutil.copy(
            project.path / name, saved / name
        )
    _, calls = trace(argv, project.path, project.env, saved / "trace")
    for name in (".awf", "ran.txt"):
        target = project.path / name
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
    for name in kept:
        (saved / name).rename(project.path / name)
    shutil.rmtree(saved)
    return calls


def stage_line_write(calls: list[Call], stage: str) -> int:
    for call in calls:
        is_stage_line = call.name == "write" and "run.jsonl>" in call.text and '\\"kind\\": \\"stage\\", ' in call.text
        if is_stage_line and f'\\"stage\\": \\"{stage}\\"' in call.text:
            return call.nth
    raise AssertionError(f"no write of the stage line of {stage}")


@pytest.mark.parametrize("error", ["ENOSPC", "EIO"])
def test_a_full_disk_at_a_stage_line_fails_the_attempt_naming_the_file_and_a_continue_reuses_what_ended(
    counted: Project, tmp_path: Path, error: str
):
    argv = ["run", "counted.py", "--id", "r"]
    nth = stage_line_write(traced(counted, argv, tmp_path), "b")
    failed = inject(argv, counted.path, counted.env, "write", nth, f"error={error}")
    reason = {"ENOSPC": "no space left on device", "EIO": "input/output error"}[error]
    assert failed.code == 1 and no_traceback(failed), failed.stderr
    said = awf_lines(failed)
    assert len(said) == 1 and f"run.jsonl: cannot be written: {reason}" in said[0], failed.stderr
    log = [json.loads(line) for line in (run_dir(counted) / "run.jsonl").read_text().splitlines()]
    end = log[-1]
    assert end["kind"] == "attempt-end" and end["outcome"] == "failed" and reason in end["reason"]
    assert not list((run_dir(counted) / "stages").glob("*awf-tmp")) and not fits_its_schemas(run_dir(counted))
    readers_agree(counted)
    again = counted.awf("run", "counted.py", "--id", "r", "--continue")
    assert again.code == 0, again.stderr
    # b's record reached its file before the line failed: it ended, and is reused.
    assert [runs_of(counted, stage) for stage in (".x", "b", "c")] == [1, 1, 1]


def test_an_io_error_on_the_attempt_end_line_exits_1_with_one_awf_line_never_completed(
    counted: Project, tmp_path: Path
):
    argv = ["run", "counted.py", "--id", "r", "--json"]
    calls = traced(counted, argv, tmp_path)
    ends = [c.nth for c in calls if c.name == "write" and "run.jsonl>" in c.text and '\\"attempt-end\\"' in c.text]
    assert len(ends) == 1
    failed = inject(argv, counted.path, counted.env, "write", ends[0], "error=EIO")
    assert failed.code == 1 and no_traceback(failed), failed.stderr
    said = awf_lines(failed)
    assert len(said) == 1 and "run.jsonl: cannot be written: input/output error" in said[0], failed.stderr
    told = json.loads(failed.stdout)
    assert told["outcome"] == "failed" and told["exit_code"] == 1 and "value" not in told
    out = json.loads((run_dir(counted) / "out.json").read_text())
    assert out["outcome"] == "failed" and out["exit_code"] == 1
    assert json.loads(counted.awf("runs", "counted/r", "--json").stdout)["status"] == "interrupted"
    assert not fits_its_schemas(run_dir(counted))
    readers_agree(counted)
    again = counted.awf("run", "counted.py", "--id", "r", "--continue")
    assert again.code == 0, again.stderr
    assert [runs_of(counted, stage) for stage in (".x", "b", "c")] == [1, 1, 1]


def test_a_crash_while_a_run_is_made_leaves_no_stuck_id(counted: Project, tmp_path: Path):
    argv = ["run", "counted.py", "--id", "r"]
    calls = traced(counted, argv, tmp_path)
    into_place = [call.nth for call in calls if call.name == "rename" and "counted/r~" in call.text]
    assert into_place
    crashed = inject(argv, counted.path, counted.env, "rename", into_place[0], "signal=SIGKILL")
    assert crashed.code in (-9, 137), crashed.stderr
    listed = counted.awf("runs")
    assert listed.code == 0 and "counted/r" not in listed.stdout, listed
    again = counted.awf(*argv)
    assert again.code == 0, again.stderr
    assert sorted(os.listdir(counted.path / ".awf" / "runs" / "counted")) == [".new-run.lock", "r"]


def test_a_stage_named_dot_x_is_reused_and_the_leftovers_of_a_crash_are_removed(counted: Project):
    stopped_at_b(counted)
    stages = run_dir(counted) / "stages"
    left = [stages / "b.json~4000000.awf-tmp", run_dir(counted) / "out.json~4000000.awf-tmp"]
    for file in left:
        file.write_text("{half")
    pid = {"version": 1, "attempt": 1, "pid": 4000000, "process_start": None, "host": "gone"}
    (run_dir(counted) / "attempt.pid").write_text(json.dumps(pid))  # left by an attempt that ended
    assert counted.awf("runs", "counted/r").code == 0
    again = counted.awf("run", "counted.py", "--id", "r", "--continue")
    assert again.code == 0, again.stderr
    assert runs_of(counted, ".x") == 1 and "↺ .x  from attempt 1" in again.stderr
    assert not any(file.exists() for file in left) and not (run_dir(counted) / "attempt.pid").exists()


def test_a_stage_file_is_durable_before_the_line_that_says_it_is(counted: Project, tmp_path: Path):
    _, calls = trace(["run", "counted.py", "--id", "r"], counted.path, counted.env, tmp_path / "trace")
    order = []
    for call in calls:
        if call.name == "rename" and "/stages/b.json" in call.text:
            order.append("rename")
        elif call.name == "fsync" and "/stages>" in call.text:
            order.append("fsync stages/")
        elif call.name == "write" and "run.jsonl>" in call.text and '\\"stage\\": \\"b\\", \\"record' in call.text:
            order.append("stage line")
    assert order[order.index("rename") :][:3] == ["rename", "fsync stages/", "stage line"], order


def test_a_line_that_is_not_json_is_read_the_same_way_by_runs_logs_and_a_continue(counted: Project):
    stopped_at_b(counted)
    log = run_dir(counted) / "run.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines.insert(2, '{"version": 1, "kind": "stage", "at": "2026-01-01T00:00:00+00:00", "attem\n')
    log.write_text("".join(lines))
    readers_agree(counted)
    shown = counted.awf("logs", "counted/r")
    assert "a line a crash cut short was set aside (73 characters)" in shown.stdout, shown.stdout
    again = counted.awf("run", "counted.py", "--id", "r", "--continue")
    assert again.code == 0, again.stderr
    readers_agree(counted)


def test_a_link_planted_in_a_run_folder_is_never_written_through(counted: Project, tmp_path: Path):
    stopped_at_b(counted)
    outside = tmp_path / "outside.json"
    outside.write_text("precious\n")
    stage = run_dir(counted) / "stages" / "b.json"
    stage.unlink()
    stage.symlink_to(outside)
    read = counted.awf("runs", "counted/r")
    assert no_traceback(read) and read.code == 3 and str(stage) in read.stderr
    again = counted.awf("run", "counted.py", "--id", "r", "--continue")
    assert no_traceback(again), again.stderr
    assert outside.read_text() == "precious\n"

    log = run_dir(counted) / "run.jsonl"
    log.rename(tmp_path / "log")
    log.symlink_to(tmp_path / "log")
    before = (tmp_path / "log").read_bytes()
    refused = counted.awf("run", "counted.py", "--id", "r", "--continue")
    assert refused.code == 3 and no_traceback(refused), refused.stderr
    assert len(awf_lines(refused)) == 1 and "symbolic link" in refused.stderr
    assert (tmp_path / "log").read_bytes() == before
    assert counted.awf("logs", "counted/r").code == 3


def test_a_run_folder_or_stages_folder_that_is_a_link_is_refused_naming_it(counted: Project, tmp_path: Path):
    stopped_at_b(counted)
    folder = run_dir(counted)
    moved = tmp_path / "moved"
    folder.rename(moved)
    folder.symlink_to(moved)
    before = (moved / "run.jsonl").read_bytes()
    for argv in (["run", "counted.py", "--id", "r", "--continue"], ["runs", "counted/r"]):
        refused = counted.awf(*argv)
        assert refused.code == 3 and no_traceback(refused), refused.stderr
        assert len(awf_lines(refused)) == 1 and f"{folder}: is a symbolic link" in refused.stderr
    assert (moved / "run.jsonl").read_bytes() == before
    # A new run on an id whose folder is a link, even one to nothing, is refused before anything is made.
    other = run_dir(counted, "n")
    other.symlink_to(tmp_path / "nowhere")
    new = counted.awf("run", "counted.py", "--id", "n")
    assert new.code == 2 and no_traceback(new) and f"{other} is a symbolic link" in new.stderr
    assert not (tmp_path / "nowhere").exists()

    folder.unlink()
    moved.rename(folder)
    stages = folder / "stages"
    stages.rename(tmp_path / "stages")
    stages.symlink_to(tmp_path / "stages")
    for argv in (["runs", "counted/r"], ["run", "counted.py", "--id", "r", "--continue"]):
        refused = counted.awf(*argv)
        assert refused.code == 3 and no_traceback(refused), refused.stderr
        assert f"{stages}: is a symbolic link" in refused.stderr
    stages.unlink()
    (tmp_path / "stages").rename(stages)
    assert counted.awf("run", "counted.py", "--id", "r", "--continue").code == 0


def test_a_run_root_that_is_a_file_is_one_awf_line_and_exit_2(counted: Project):
    (counted.path / "afile").touch()
    for argv in (
        ["run", "counted.py", "--id", "r", "--run-root", "afile"],
        ["runs", "--run-root", "afile"],
        ["logs", "counted/r", "--run-root", "afile"],
    ):
        result = counted.awf(*argv)
        assert result.code == 2 and no_traceback(result), (argv, result.stderr)
        assert len(awf_lines(result)) == 1 and "is a file, not a folder" in result.stderr


def test_a_run_folder_replaced_by_a_file_or_a_log_replaced_by_a_folder_is_one_awf_line(counted: Project):
    stopped_at_b(counted)
    folder = run_dir(counted)
    folder.rename(counted.path / "moved")
    folder.write_text("")
    for argv, code in ((["run", "counted.py", "--id", "r", "--continue"], 2), (["logs", "counted/r"], 3)):
        result = counted.awf(*argv)
        assert result.code == code and no_traceback(result) and len(awf_lines(result)) == 1, (argv, result.stderr)
    folder.unlink()
    (counted.path / "moved").rename(folder)
    (folder / "run.jsonl").rename(counted.path / "log")
    (folder / "run.jsonl").mkdir()
    for argv in (["run", "counted.py", "--id", "r", "--continue"], ["runs", "counted/r"], ["logs", "counted/r"]):
        result = counted.awf(*argv)
        assert result.code == 3 and no_traceback(result) and len(awf_lines(result)) == 1, (argv, result.stderr)


def test_a_read_only_record_ends_the_attempt_with_one_awf_line(counted: Project, tmp_path: Path):
    stopped_at_b(counted)
    argv = ["run", "counted.py", "--id", "r", "--continue"]
    calls = traced(counted, argv, tmp_path)
    opens = [
        call.nth for call in calls if call.name == "openat" and "run.jsonl" in call.text and "O_WRONLY" in call.text
    ]
    # As root no file mode stops a write: the file system says it, as a read-only mount would.
    failed = inject(argv, counted.path, counted.env, "openat", opens[0], "error=EROFS")
    assert failed.code == 1 and no_traceback(failed), failed.stderr
    assert len(awf_lines(failed)) == 1 and "read-only file system" in failed.stderr


@pytest.mark.parametrize("kind", ["fifo", "device", "large"])
def test_values_from_anything_but_a_regular_file_of_at_most_64_mib_are_refused_before_anything_is_recorded(
    counted: Project, kind: str
):
    assert counted.awf("run", "counted.py", "--id", "r", "--from-stage", "c").code == 3
    log = run_dir(counted) / "run.jsonl"
    before = log.read_bytes()
    given = {"fifo": counted.path / "values.fifo", "device": Path("/dev/zero"), "large": counted.path / "big.json"}[
        kind
    ]
    if kind == "fifo":
        os.mkfifo(given)
    if kind == "large":
        with open(given, "wb") as big:
            big.truncate(64 * 1024 * 1024 + 1)
    refused = counted.awf("run", "counted.py", "--id", "r", "--continue", "--from-stage", "c", "--values", str(given))
    assert refused.code == 2 and len(awf_lines(refused)) == 1, refused.stderr
    assert {"fifo": "a pipe", "device": "a device", "large": "AWF_VALUES_MAX_BYTES"}[kind] in refused.stderr
    assert log.read_bytes() == before


def test_the_values_cap_is_raised_or_lowered_by_an_environment_variable(counted: Project):
    assert counted.awf("run", "counted.py", "--id", "r", "--from-stage", "c").code == 3
    values = counted.write("values.json", json.dumps({".x": "x by hand", "b": "b by hand"}))
    argv = ["run", "counted.py", "--id", "r", "--continue", "--from-stage", "c", "--values", str(values)]
    small = counted.awf(*argv, env={"AWF_VALUES_MAX_BYTES": "10"})
    assert small.code == 2 and "AWF_VALUES_MAX_BYTES" in small.stderr
    assert counted.awf(*argv, env={"AWF_VALUES_MAX_BYTES": "1000"}).code == 0
