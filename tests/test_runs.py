"""Runs, ids, attempts and the ways `awf run` refuses, as the Runs page says."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
import time

import pytest
from conftest import AWF, Project
from workflows import THREE

SHIP = """
import awf

PLAN = {"type": "object", "required": ["doc"], "additionalProperties": False,
        "properties": {"doc": {"type": "string"}}}

@awf.workflow(name="ship-ticket", description="Plan a ticket.", version="1.0.0",
              prepare=lambda argv: {"ticket": argv[0] if argv else ""},
              id=lambda args: args["ticket"] or None,
              present=lambda value: f"planned in {value['doc']}")
async def ship(wf, ticket):
    async def plan():
        return {"doc": f"docs/{ticket}.md"}
    return await wf.stage("plan", plan, result=PLAN)
"""

NO_PREPARE = """
import awf

@awf.workflow(name="bare", description="No arguments.")
async def bare(wf):
    await wf.stage("only", lambda: None)
    return {"run_id": wf.run_id, "attempt": wf.attempt, "cwd": str(wf.cwd)}
"""


def test_an_id_given_with_dash_dash_id_names_the_run(project: Project):
    project.write("ship.py", SHIP)
    result = project.awf("run", "ship.py", "--id", "mine", "--", "ABC-1")
    assert result.code == 0, result.stderr
    assert result.stdout == "planned in docs/ABC-1.md\n"
    assert (project.run_dir("ship-ticket", "mine") / "run.jsonl").exists()


def test_the_workflows_id_function_names_the_run(project: Project):
    project.write("ship.py", SHIP)
    assert project.awf("run", "ship.py", "--", "ABC-1").code == 0
    assert project.run_dir("ship-ticket", "ABC-1").is_dir()


def test_an_empty_id_from_the_workflows_id_function_says_which_function_and_how_to_go_on(project: Project):
    project.write("ship.py", SHIP.replace('args["ticket"] or None', 'args["ticket"]'))
    result = project.awf("run", "ship.py")
    assert result.code == 2
    assert result.stderr == (
        'awf: id(args) returned "" for argv []; give --id, or the arguments the workflow\'s prepare expects\n'
    )
    assert not list(project.path.glob(".awf/runs/*/*/run.jsonl"))
    bad = project.awf("run", "ship.py", "--", "a/b")
    assert bad.code == 2 and bad.stderr.startswith("awf: id(args) returned 'a/b' for argv [\"a/b\"]: run id 'a/b'")
    assert project.awf("run", "ship.py", "--id", "given").code == 0


def test_a_generated_id_is_local_time_and_four_hex_digits(project: Project):
    project.write("bare.py", NO_PREPARE)
    result = project.awf("run", "bare.py", "--json")
    assert result.code == 0
    run_id = result.out["id"]
    assert re.fullmatch(r"\d{8}-\d{4}-[0-9a-f]{4}", run_id)
    assert result.out["value"]["run_id"] == run_id and result.out["value"]["attempt"] == 1


@pytest.mark.parametrize("bad", ["-x", "a/b", "a b", "é", "x" * 129, ".hidden"])
def test_a_bad_id_is_refused_and_starts_nothing(project: Project, bad: str):
    project.write("bare.py", NO_PREPARE)
    result = project.awf("run", "bare.py", "--id", bad)
    assert result.code == 2
    assert result.stderr.startswith("awf: run id")
    assert (
        not (project.path / ".awf" / "runs" / "bare").exists()
        or not any((project.path / ".awf" / "runs" / "bare").iterdir())
        or all(p.name.startswith(".") for p in (project.path / ".awf" / "runs" / "bare").iterdir())
    )


def test_a_new_run_on_an_id_that_exists_or_differs_only_in_case_is_refused(project: Project):
    project.write("bare.py", NO_PREPARE)
    assert project.awf("run", "bare.py", "--id", "Run-1").code == 0
    same = project.awf("run", "bare.py", "--id", "Run-1")
    assert same.code == 2 and "exists" in same.stderr and "--continue" in same.stderr
    case = project.awf("run", "bare.py", "--id", "run-1")
    assert case.code == 2 and "differ only in case" in case.stderr
    assert len([e for e in project.log("bare", "Run-1") if e["kind"] == "attempt-start"]) == 1


def test_the_record_is_private_and_kept_out_of_git(project: Project):
    project.write("bare.py", NO_PREPARE)
    assert project.awf("run", "bare.py", "--id", "r1").code == 0
    root = project.path / ".awf" / "runs"
    assert (root / ".gitignore").read_text() == "*\n"
    run = root / "bare" / "r1"
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    assert stat.S_IMODE((run / "stages").stat().st_mode) == 0o700
    for name in ("run.jsonl", "out.json", "stages/only.json"):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o600, name
    out = json.loads((run / "out.json").read_text())
    assert out["version"] == 1 and out["outcome"] == "completed"
    assert all(json.loads(line)["version"] == 1 for line in (run / "run.jsonl").read_text().splitlines())
    assert not (run / "attempt.pid").exists()


def test_run_root_replaces_dot_awf_runs(project: Project, tmp_path_factory):
    project.write("bare.py", NO_PREPARE)
    elsewhere = tmp_path_factory.mktemp("root")
    assert project.awf("run", "bare.py", "--id", "r1", "--run-root", str(elsewhere)).code == 0
    assert (elsewhere / "bare" / "r1" / "run.jsonl").exists()
    assert not (project.path / ".awf").exists()


def test_without_present_a_completed_run_prints_the_whole_out_json(project: Project):
    project.write("bare.py", NO_PREPARE)
    result = project.awf("run", "bare.py", "--id", "r1")
    assert json.loads(result.stdout) == json.loads((project.run_dir("bare", "r1") / "out.json").read_text())


def test_json_prints_the_record_even_with_present(project: Project):
    project.write("ship.py", SHIP)
    result = project.awf("run", "ship.py", "--json", "--", "A-1")
    assert result.out["value"] == {"doc": "docs/A-1.md"}


def test_stdout_carries_only_the_result_on_an_ending_that_is_not_completed(project: Project):
    project.write("three.py", THREE)
    (project.path / "mode-plan").write_text("stop")
    result = project.awf("run", "three.py", "--id", "r1")
    assert result.code == 3 and result.stdout == ""
    assert "go on:" in result.stderr and "records: .awf/runs/three/r1" in result.stderr


def test_arguments_to_a_workflow_without_prepare_are_refused(project: Project):
    project.write("bare.py", NO_PREPARE)
    result = project.awf("run", "bare.py", "--", "surprise")
    assert result.code == 2 and "takes no arguments" in result.stderr
    assert not (project.path / ".awf" / "runs" / "bare").exists()


def test_a_file_that_does_not_import_leaves_no_folder_so_the_same_command_starts_it_again(project: Project):
    project.write("ship.py", SHIP.replace("import awf", "import awf\nraise ImportError('no module named shiny')"))
    broken = project.awf("run", "ship.py", "--", "A-1")
    assert broken.code == 1
    assert "ImportError: no module named shiny" in broken.stderr
    assert not (project.path / ".awf" / "runs" / "ship-ticket" / "A-1").exists()
    project.write("ship.py", SHIP)
    assert project.awf("run", "ship.py", "--", "A-1").code == 0


def test_a_prepare_that_throws_leaves_no_folder(project: Project):
    project.write("ship.py", SHIP.replace('argv[0] if argv else ""', "argv[1]"))
    result = project.awf("run", "ship.py", "--", "A-1")
    assert result.code == 2 and "prepare refused" in result.stderr and "IndexError" in result.stderr
    assert not (project.path / ".awf" / "runs" / "ship-ticket" / "A-1").exists()


@pytest.mark.parametrize(
    ("file", "message"),
    [
        ("missing.py", "does not exist"),
        ("empty.py", "defines no workflow"),
    ],
)
def test_a_bad_workflow_file_is_a_clear_error(project: Project, file: str, message: str):
    project.write("empty.py", "x = 1\n")
    result = project.awf("run", file)
    assert result.code == 2 and result.stderr.startswith("awf: ") and message in result.stderr


def test_a_file_with_several_workflows_needs_a_name(project: Project):
    project.write("two.py", NO_PREPARE + NO_PREPARE.replace('"bare"', '"other"').replace("def bare", "def other"))
    result = project.awf("run", "two.py")
    assert result.code == 2 and "two.py:NAME" in result.stderr
    named = project.awf("run", "two.py:other", "--id", "x", "--json")
    assert named.code == 0 and named.out["workflow"] == "other"


def test_a_continue_keeps_the_runs_arguments_and_cwd(project: Project, tmp_path_factory):
    project.write("three.py", THREE)
    (project.path / "mode-review").write_text("stop")
    assert project.awf("run", "three.py", "--id", "r1").code == 3
    other = project.awf("run", "three.py", "--id", "r1", "--continue", "--", "extra")
    assert other.code == 2 and "different input is a different run" in other.stderr
    elsewhere = tmp_path_factory.mktemp("cwd")
    moved = project.awf(
        "run",
        "three.py",
        "--id",
        "r1",
        "--continue",
        "--cwd",
        str(elsewhere),
        "--run-root",
        str(project.path / ".awf" / "runs"),
    )
    assert moved.code == 2 and "a continue keeps the run's --cwd" in moved.stderr


def test_a_continue_whose_prepare_no_longer_accepts_the_arguments_is_refused(project: Project):
    stops = SHIP.replace("return await wf.stage", "await wf.stage").rstrip() + "\n    wf.stop('later')\n"
    project.write("ship.py", stops)
    assert project.awf("run", "ship.py", "--", "A-1").code == 3
    project.write("ship.py", SHIP.replace('argv[0] if argv else ""', "int(argv[0])"))
    result = project.awf("run", "ship.py", "--id", "A-1", "--continue")
    assert result.code == 2
    assert "prepare no longer accepts the run's recorded arguments ['A-1']" in result.stderr
    assert "start a new run" in result.stderr


def test_a_continue_that_finds_no_run_says_where_it_looked_and_names_the_other_workflow(project: Project):
    project.write("bare.py", NO_PREPARE)
    project.write("three.py", THREE)
    assert project.awf("run", "bare.py", "--id", "shared").code == 0
    result = project.awf("run", "three.py", "--id", "shared", "--continue")
    assert result.code == 2
    assert "there is no run three/shared" in result.stderr
    assert str(project.path / ".awf" / "runs" / "three") in result.stderr
    assert "belongs to a run of bare" in result.stderr
    assert project.awf("run", "three.py", "--continue").code == 2


def test_two_continues_at_once_let_exactly_one_through(project: Project):
    project.write("three.py", THREE)
    (project.path / "mode-plan").write_text("stop")
    assert project.awf("run", "three.py", "--id", "r1").code == 3
    (project.path / "mode-plan").write_text("hang")
    first = project.start("run", "three.py", "--id", "r1", "--continue")
    project.wait_for(project.path / "in-plan")
    second = project.awf("run", "three.py", "--id", "r1", "--continue")
    assert second.code == 2
    assert f"attempt 2 (pid {first.pid})" in second.stderr
    first.terminate()
    first.wait(timeout=20)


def test_two_continues_started_together_let_exactly_one_through(project: Project):
    project.write("three.py", THREE)
    (project.path / "mode-plan").write_text("stop")
    assert project.awf("run", "three.py", "--id", "r1").code == 3
    (project.path / "mode-plan").write_text("ok")
    processes = [
        subprocess.Popen(
            [*AWF, "run", "three.py", "--id", "r1", "--continue"],
            cwd=project.path,
            env=project.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    codes = sorted(p.wait(timeout=60) for p in processes)
    assert codes.count(0) >= 1
    # Every attempt that went on ran alone: attempts are numbered without a gap or a repeat.
    starts = [e["attempt"] for e in project.log("three", "r1") if e["kind"] == "attempt-start"]
    assert starts == list(range(1, len(starts) + 1))
    assert set(codes) <= {0, 2}


def test_two_new_runs_on_one_id_at_once_let_exactly_one_through(project: Project):
    project.write("bare.py", NO_PREPARE.replace("lambda: None", 'lambda: __import__("asyncio").sleep(0.5)'))
    processes = [
        subprocess.Popen(
            [*AWF, "run", "bare.py", "--id", "same"],
            cwd=project.path,
            env=project.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    codes = sorted(p.wait(timeout=60) for p in processes)
    assert codes == [0, 2, 2, 2]


def test_wf_attempt_counts_and_run_id_stays(project: Project):
    project.write("three.py", THREE)
    (project.path / "mode-review").write_text("stop")
    for attempt in (1, 2):
        args = ["run", "three.py", "--id", "r1"] + (["--continue"] if attempt > 1 else [])
        assert project.awf(*args).code == 3
        assert (project.path / f"ran-review-{attempt}").exists()


def test_version_prints_and_usage_errors_exit_2(project: Project):
    version = subprocess.run([*AWF, "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("awf ")
    for args in (
        ["run"],
        ["nope"],
        ["run", "x.py", "--bogus"],
        ["run", "x.py", "--timeout", "soon"],
        ["run", "x.py", "stray"],
    ):
        result = subprocess.run([*AWF, *args], capture_output=True, text=True, cwd=project.path)
        assert result.returncode == 2, args
        assert result.stderr.startswith("awf: "), (args, result.stderr)
        assert result.stdout == ""


def test_python_dash_m_awf_is_the_awf_command():
    assert subprocess.run([sys.executable, "-m", "awf", "--version"], capture_output=True).returncode == 0


def test_a_workflow_edited_at_once_to_the_same_size_runs_as_edited(project: Project):
    """Python's bytecode cache keys on the second and the size; a continue must run the new code."""
    env = {"PYTHONDONTWRITEBYTECODE": ""}
    project.write("bare.py", NO_PREPARE.replace("return {", "wf.stop('one')\n    return {"))
    assert project.awf("run", "bare.py", "--id", "r1", env=env).code == 3
    project.write("bare.py", NO_PREPARE.replace("return {", "wf.stop('two')\n    return {"))
    again = project.awf("run", "bare.py", "--id", "r1", "--continue", "--json", env=env)
    assert again.out["reason"] == "two"
    assert not (project.path / "__pycache__").exists()


HELD = """
import asyncio
from pathlib import Path

import awf


async def hold():
    while not Path("release").exists():
        await asyncio.sleep(0.02)


@awf.workflow(name="held", description="Holds the run until released.")
async def held(wf):
    await wf.stage("only", hold)
"""


def racing(project: Project, args: list[str], count: int) -> list[tuple[subprocess.Popen[str], str]]:
    """`count` awf runs started together; each refused one is waited for while the winner holds the run."""
    processes = [
        subprocess.Popen(
            [*AWF, *args],
            cwd=project.path,
            env=project.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    deadline = time.monotonic() + 120
    while sum(process.poll() is not None for process in processes) < count - 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    refused = [(process, process.communicate()[1]) for process in processes if process.poll() is not None]
    (project.path / "release").touch()
    for process in processes:
        process.wait(timeout=60)
    return refused


def test_racing_new_runs_are_each_refused_naming_the_attempt_and_pid_that_hold_the_run(project: Project):
    project.write("held.py", HELD)
    refused = racing(project, ["run", "held.py", "--id", "same"], 12)
    assert len(refused) == 11
    starts = [e for e in project.log("held", "same") if e["kind"] == "attempt-start"]
    assert len(starts) == 1
    for process, stderr in refused:
        assert process.returncode == 2
        assert f"run held/same exists, and attempt 1 (pid {starts[0]['pid']}) is running it now" in stderr, stderr


def test_racing_continues_are_each_refused_naming_the_attempt_and_pid_that_hold_the_run(project: Project):
    project.write("held.py", HELD)
    (project.path / "release").touch()
    assert project.awf("run", "held.py", "--id", "r1").code == 0
    (project.path / "release").unlink()
    refused = racing(project, ["run", "held.py", "--id", "r1", "--continue", "--from-stage", "only"], 12)
    assert len(refused) == 11
    starts = [e for e in project.log("held", "r1") if e["kind"] == "attempt-start"]
    assert [e["attempt"] for e in starts] == [1, 2]
    for process, stderr in refused:
        assert process.returncode == 2
        assert f"run held/r1 is taken by attempt 2 (pid {starts[1]['pid']}), still running" in stderr, stderr
