"""`awf runs`: the table and one run in full, over runs in every status made by real attempts."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from conftest import Project
from reading_runs import end_live, make_world, run, write_steps

from awf.record.schemas import validator


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    project = Project(tmp_path_factory.mktemp("runs"))
    made = make_world(project)
    yield project, made
    end_live(project, made["live"])


def statuses(project: Project, *args: str) -> dict[str, dict]:
    result = project.awf("runs", "--json", *args)
    assert result.code == 0, result.stderr
    validator("runs")(result.out)
    return {item["id"]: item for item in result.out["runs"]}


def test_the_attempts_ended_as_the_runs_page_says(world):
    _, made = world
    assert made["codes"] == {"done": 0, "stopped": 3, "failed": 1, "timed": 1, "stopped-again": 3, "cancelled": 130}


def test_each_run_reads_its_status_off_its_files(world):
    project, _ = world
    runs = statuses(project)
    assert {run_id: item["status"] for run_id, item in runs.items()} == {
        "done": "completed",
        "stopped": "stopped",
        "failed": "failed",
        "timed": "timed-out",
        "cancelled": "cancelled",
        "crashed": "interrupted",
        "live": "running",
    }
    assert runs["stopped"]["attempts"] == 2
    assert runs["done"]["attempts"] == 1
    assert runs["stopped"]["stage"] == "build"
    assert runs["crashed"]["stage"] == "build"
    assert runs["live"]["stage"] == "build"
    assert runs["done"]["stage"] == "review"
    assert runs["live"]["pid"] == made_pid(world) and runs["crashed"]["pid"] is None
    assert all(item["cost"] is None for item in runs.values())
    # Nothing derived is stored: no file in a run's folder names its status.
    for path in (project.path / ".awf" / "runs" / "steps" / "crashed").rglob("*"):
        if path.is_file() and path.name != "run.jsonl":
            assert "interrupted" not in path.read_text()


def made_pid(world) -> int:
    return world[1]["live"].pid


def test_the_table_lists_newest_first_with_every_column(world):
    project, _ = world
    result = project.awf("runs")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["workflow", "id", "status", "stage", "attempts", "started", "moved", "cost"]
    ids = [line.split()[1] for line in lines[1:]]
    assert ids == ["live", "crashed", "cancelled", "timed", "failed", "stopped", "done"]
    live = next(line for line in lines if line.split()[1] == "live")
    assert "running" in live and "build" in live and live.rstrip().endswith("-")
    assert " ago" in live or "just now" in live


def test_status_and_workflow_filters(world):
    project, _ = world
    assert set(statuses(project, "--status", "interrupted,cancelled")) == {"crashed", "cancelled"}
    assert set(statuses(project, "--status", "running", "--status", "completed")) == {"live", "done"}
    assert set(statuses(project, "steps")) == {"done", "stopped", "failed", "timed", "cancelled", "crashed", "live"}
    empty = project.awf("runs", "nothing-here")
    assert empty.code == 0 and empty.stdout == "" and "no runs of nothing-here" in empty.stderr


def test_usage_errors_exit_2(world):
    project, _ = world
    bad = project.awf("runs", "--status", "sleeping")
    assert bad.code == 2 and bad.stderr.startswith("awf: --status sleeping") and bad.stdout == ""
    assert project.awf("runs", "../etc/x").code == 2
    assert project.awf("runs", "steps/done", "--status", "completed").code == 2


def test_no_such_run_exits_1_and_says_where_it_looked(world):
    project, _ = world
    result = project.awf("runs", "steps/nope")
    assert result.code == 1
    assert "there is no run steps/nope" in result.stderr and str(project.path / ".awf" / "runs") in result.stderr


def test_one_run_in_full(world):
    project, _ = world
    result = project.awf("runs", "steps/stopped")
    assert result.code == 0, result.stderr
    text = result.stdout
    assert text.startswith("steps/stopped  stopped in build")
    assert 'argv:     ["stop"]' in text and f"cwd:      {project.path}" in text
    assert "the builder gave no answer" in text
    assert "--continue" in text  # attempt 2's flags
    assert text.rstrip().endswith("go on: awf run steps.py --id stopped --continue")
    data = project.awf("runs", "steps/stopped", "--json").out
    validator("runs")(data)
    assert [a["status"] for a in data["attempts"]] == ["stopped", "stopped"]
    assert data["attempts"][1]["flags"] == {"continue": True}
    assert [(s["stage"], s["outcome"], s["attempt"]) for s in data["stages"]] == [
        ("plan", "succeeded", 1),
        ("build", "stopped", 2),
    ]
    assert data["stages"][0]["summary"] == "docs/stopped.md"


def test_a_live_run_shows_its_pid_and_no_command_to_go_on(world):
    project, made = world
    data = project.awf("runs", "steps/live", "--json").out
    assert data["status"] == "running" and data["go_on"] is None
    assert data["attempts"][0]["pid"] == made["live"].pid
    text = project.awf("runs", "steps/live").stdout
    assert str(made["live"].pid) in text and "go on" not in text


def test_an_interrupted_run_names_the_command_that_goes_on(world):
    project, _ = world
    data = project.awf("runs", "steps/crashed", "--json").out
    assert data["status"] == "interrupted" and data["attempts"][0]["exit_code"] is None
    assert data["go_on"] == "awf run steps.py --id crashed --continue"


def test_the_go_on_of_a_crash_before_its_start_point_keeps_from_stage(project: Project):
    from reading_runs import write_steps

    write_steps(project)
    assert run(project, "redo", "complete").code == 0
    assert project.awf("run", "steps.py", "--id", "redo", "--continue", "--from-stage", "build").code == 0
    # A crash just after attempt 2 began, before it reached build: its log ends at its start.
    log = project.run_dir("steps", "redo") / "run.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    started = next(i for i, line in enumerate(lines) if '"attempt-start"' in line and '"attempt": 2' in line)
    log.write_text("".join(lines[: started + 1]))
    data = project.awf("runs", "steps/redo", "--json").out
    assert data["status"] == "interrupted"
    assert data["go_on"] == "awf run steps.py --id redo --continue --from-stage build"
    # The printed command works: it redoes build and review, and the run completes again.
    again = project.awf(*shlex.split(data["go_on"])[1:])
    assert again.code == 0, again.stderr
    log = project.log("steps", "redo")
    assert [e["stage"] for e in log if e["kind"] == "stage-start" and e["attempt"] == 3] == ["build", "review"]


def test_from_another_folder_the_command_names_the_run_root(world, tmp_path):
    project, _ = world
    root = project.path / ".awf" / "runs"
    data = project.awf("runs", "steps/crashed", "--json", "--run-root", str(root), cwd=tmp_path).out
    assert data["go_on"] == f"awf run {project.path / 'steps.py'} --id crashed --continue --cwd {project.path}"


def test_a_damaged_log_exits_3_naming_the_file_and_the_rest_still_list(world, tmp_path):
    project, _ = world
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(project.path / ".awf" / "runs" / "steps", root / "steps")
    log = root / "steps" / "failed" / "run.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[-1] = '{"version": 1, "kind": "attempt-end", "at": "2026-01-01T00:00:00+00:00", "attempt": 1, "outcome": 7}\n'
    log.write_text("".join(lines))
    listed = project.awf("runs", "--run-root", str(root), "--json")
    assert listed.code == 3
    assert str(log) in listed.stderr and "does not fit log-entry.schema.json" in listed.stderr
    assert "failed" not in {item["id"] for item in listed.out["runs"]} and len(listed.out["runs"]) == 6
    assert listed.out["problems"][0]["file"] == str(log)
    one = project.awf("runs", "steps/failed", "--run-root", str(root))
    assert one.code == 3 and str(log) in one.stderr
    assert one.stdout.startswith("steps/failed") and "plan" in one.stdout  # what could be read is shown


def test_an_unreadable_stage_record_exits_3_and_shows_the_rest(world, tmp_path):
    project, _ = world
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(project.path / ".awf" / "runs" / "steps" / "done", root / "steps" / "done")
    record = root / "steps" / "done" / "stages" / "plan.json"
    record.write_text("{ not json")
    result = project.awf("runs", "steps/done", "--run-root", str(root))
    assert result.code == 3
    assert str(record) in result.stderr
    assert "review" in result.stdout and "unreadable" in result.stdout


def test_an_unreadable_log_exits_3(world, tmp_path):
    project, _ = world
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(project.path / ".awf" / "runs" / "steps" / "done", root / "steps" / "done")
    log = root / "steps" / "done" / "run.jsonl"
    log.unlink()
    log.mkdir()  # unreadable as a file, even by root
    listed = project.awf("runs", "--run-root", str(root))
    assert listed.code == 3 and f"{log}: cannot be read" in listed.stderr


def test_an_empty_root_lists_nothing(project: Project):
    result = project.awf("runs")
    assert result.code == 0 and result.stdout == ""
    assert json.loads(project.awf("runs", "--json").stdout)["runs"] == []


def test_one_run_with_a_damaged_line_an_unreadable_file_exits_3_and_shows_the_rest(world, tmp_path):
    project, _ = world
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(project.path / ".awf" / "runs" / "steps" / "stopped", root / "steps" / "stopped")
    folder = root / "steps" / "stopped"
    log = folder / "run.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    damaged = next(i for i, line in enumerate(lines) if '"kind": "log"' in line)
    # JSON that does not fit (a line that is not JSON at all is passed over as torn).
    lines.insert(
        damaged, '{"version": 1, "kind": "stage-start", "at": "2026-01-01T00:00:00+00:00", "attempt": "one"}\n'
    )
    log.write_text("".join(lines))
    (folder / "out.json").unlink()
    (folder / "out.json").mkdir()  # a file even root cannot read as a file
    shown = project.awf("runs", "steps/stopped", "--run-root", str(root))
    assert shown.code == 3
    assert f"awf: a file of the run cannot be read: {log}: the line at byte" in shown.stderr
    assert f"awf: a file of the run cannot be read: {folder / 'out.json'}: cannot be read" in shown.stderr
    assert "stopped in build" in shown.stdout and "the builder gave no answer" in shown.stdout
    data = project.awf("runs", "steps/stopped", "--run-root", str(root), "--json")
    assert data.code == 3
    validator("runs")(data.out)
    assert len(data.out["attempts"]) == 2 and [item["stage"] for item in data.out["stages"]] == ["plan", "build"]
    assert {item["file"] for item in data.out["problems"]} == {str(log), str(folder / "out.json")}
    # A stage record that is a folder cannot be read either, as the test of a damaged one shows.
    (folder / "stages" / "plan.json").unlink()
    (folder / "stages" / "plan.json").mkdir()
    assert project.awf("runs", "steps/stopped", "--run-root", str(root)).code == 3


def timeless(text: str) -> str:
    """`text` without what a second between two reads changes: ages, times of day, and the width
    of a column that holds them."""
    text = re.sub(r"just now|\d+[smhd] ago|\d+ \w+ ago", "AGO", text)
    return re.sub(r" +", " ", re.sub(r"\d+", "N", text))


def test_a_root_without_runs_is_answered_before_the_readers_are_imported(project: Project, tmp_path):
    root = tmp_path / "root"
    for made in (None, root, root / ".cache"):  # none yet, an empty one, one with only its kept summaries
        if made is not None:
            made.mkdir()
        listed = project.awf("runs", "--run-root", str(root))
        assert (listed.code, listed.stdout, listed.stderr) == (0, "", f"no runs under {root}\n")
        as_json = project.awf("runs", "--json", "--run-root", str(root))
        assert as_json.code == 0 and as_json.out == {"version": 1, "root": str(root), "runs": [], "problems": []}
        timed, imported = project.awf_imports("runs", "--run-root", str(root))
        assert timed.code == 0 and "awf.record.roots" in imported
        assert not imported & {"awf.record.summary", "awf.record.layout", "dataclasses", "typer"}, made
    write_steps(project)
    assert run(project, "done", "complete").code == 0
    of_another = project.awf("runs", "nothing-here")
    assert (of_another.code, of_another.stdout) == (0, "") and "no runs of nothing-here under" in of_another.stderr
    bad = project.awf("runs", "--status", "lost", "--run-root", str(root))
    assert bad.code == 2 and "--status lost: a run's status is one of queued, running" in bad.stderr
