"""awf.runs: reading runs from Python gives what `awf runs --json` and `awf logs --json` say."""

from __future__ import annotations

import json

import pytest
from conftest import Project
from reading_runs import run, write_steps

import awf.runs


@pytest.fixture
def runs(project: Project) -> Project:
    write_steps(project)
    assert run(project, "done", "complete").code == 0
    assert run(project, "stuck", "stop").code == 3
    assert run(project, "broke", "fail").code == 1
    return project


def test_list_gives_each_run_newest_first_and_filters_by_status_and_workflow(runs: Project) -> None:
    listed = awf.runs.list(runs.path)

    assert [one.name for one in listed] == ["steps/broke", "steps/stuck", "steps/done"]
    shown = json.loads(runs.awf("runs", "--json").stdout)["runs"]
    assert [(one.id, one.status, one.in_stage, one.attempts) for one in listed] == [
        (item["id"], item["status"], item["stage"], item["attempts"]) for item in shown
    ]
    assert [one.id for one in awf.runs.list(runs.path, status=["stopped", "failed"])] == ["broke", "stuck"]
    assert [one.id for one in awf.runs.list(root=runs.path / ".awf" / "runs", status="completed")] == ["done"]
    assert awf.runs.list(runs.path, workflow="other") == []
    with pytest.raises(ValueError, match="status paused: a run's status is one of queued, running"):
        awf.runs.list(runs.path, status="paused")  # type: ignore[arg-type]


def test_get_gives_the_run_in_full_with_each_stages_value(runs: Project) -> None:
    stuck = awf.runs.get("steps/stuck", runs.path)

    assert (stuck.name, stuck.status, stuck.in_stage) == ("steps/stuck", "stopped", "build")
    assert list(stuck.stages) == ["plan", "build"]
    assert stuck.stage("plan").value == {"doc": "docs/stuck.md"}
    assert (stuck.stage("build").outcome, stuck.stage("build").reason) == ("stopped", "the builder gave no answer")
    [attempt] = stuck.attempts
    assert (attempt.number, attempt.status, attempt.exit_code) == (1, "stopped", 3)
    shown = json.loads(runs.awf("runs", "steps/stuck", "--json").stdout)
    assert stuck.go_on == shown["go_on"] and stuck.go_on is not None and "--continue" in stuck.go_on
    assert (stuck.argv, stuck.cwd, stuck.worktree, stuck.problems) == (("stop",), str(runs.path), None, ())
    with pytest.raises(awf.runs.NoSuchStage, match="run steps/stuck has no record of stage 'review'; it has: plan"):
        stuck.stage("review")


def test_a_stage_edited_by_hand_is_read_as_edited(runs: Project) -> None:
    record = runs.run_dir("steps", "done") / "stages" / "plan.json"
    edited = json.loads(record.read_text())
    edited["value"] = {"doc": "docs/by-hand.md"}
    record.write_text(json.dumps(edited))

    plan = awf.runs.get("steps/done", runs.path).stage("plan")

    assert (plan.value, plan.edited) == ({"doc": "docs/by-hand.md"}, True)


def test_logs_read_each_line_after_a_cursor_as_awf_logs_does(runs: Project) -> None:
    done = awf.runs.get("steps/done", runs.path)
    lines = list(done.logs())
    shown = [json.loads(line) for line in runs.awf("logs", "steps/done", "--json").stdout.splitlines()]

    assert [(line.cursor, line.entry) for line in lines] == [(item["cursor"], item["entry"]) for item in shown]
    assert lines[0].kind == "run" and lines[-1].kind == "attempt-end"
    middle = lines[len(lines) // 2].cursor
    assert [line.cursor for line in done.logs(after=middle)] == [line.cursor for line in lines if line.cursor > middle]


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("steps/none", "there is no run steps/none: looked in"),
        ("steps", "'steps' is not a run's name: name it as WORKFLOW/ID"),
        ("steps/../x", "may hold only letters"),
    ],
)
def test_a_run_that_is_not_there_is_no_such_run(runs: Project, name: str, said: str) -> None:
    with pytest.raises(awf.runs.NoSuchRun, match=said.replace(".", r"\.").replace("(", r"\(")):
        awf.runs.get(name, runs.path)


def test_a_log_that_does_not_fit_its_schema_is_an_error_naming_the_file(runs: Project) -> None:
    log = runs.run_dir("steps", "done") / "run.jsonl"
    log.write_text(log.read_text().replace('"kind": "run"', '"kind": 7', 1))

    with pytest.raises(awf.runs.RecordError, match=str(log)):
        awf.runs.get("steps/done", runs.path)
