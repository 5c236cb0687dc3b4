"""A workflow's report: `report(value, ending)` at every ending, kept as the run's report.md."""

from __future__ import annotations

import json
import signal

import pytest
from conftest import Project, finish, send

from awf.engine.loader import load_workflow
from awf.testing import run_workflow

SHIP = """
import asyncio
import os
from pathlib import Path

import awf


def report(value, ending: awf.Ending):
    if os.environ.get("REPORT") == "raise":
        raise KeyError("summary")
    if os.environ.get("REPORT") == "none":
        return None
    lines = [f"# {ending.run}, attempt {ending.attempt}: {ending.outcome} (exit {ending.exit_code})"]
    lines += [f"- {s.name}: {s.outcome}, {'ran' if s.ran else s.how} (attempt {s.attempt}) {json.dumps(s.value)}"
              for s in ending.stages]
    lines += [f"stage: {ending.stage}", f"why: {ending.reason}", f"go on: {ending.go_on}"]
    lines.append(f"value: {json.dumps(value)}")
    return "\\n".join(lines)


@awf.workflow(name="ship", description="Plan, then build.", report=report)
async def ship(wf: awf.Context):
    async def plan():
        return {"doc": "docs/plan.md"}

    async def build():
        how = os.environ.get("BUILD", "ok")
        if how == "stop":
            wf.stop("nothing built yet")
        if how == "throw":
            raise RuntimeError("the build broke")
        if how == "wait":
            Path("waiting").write_text("")
            await asyncio.sleep(60)
        return {"branch": "fix/1"}

    await wf.stage("plan", plan, result={"type": "object"})
    return await wf.stage("build", build, result={"type": "object"})
""".replace("import os\n", "import json\nimport os\n", 1)


@pytest.fixture
def ship(project: Project) -> Project:
    project.write("ship.py", SHIP)
    return project


def report_lines(project: Project, run_id: str) -> list[dict]:
    return [entry for entry in project.log("ship", run_id) if entry["kind"] == "report"]


def test_the_report_of_a_stopped_run_is_its_report_md_with_the_stages_and_the_command_that_goes_on(ship: Project):
    done = ship.awf("run", "ship.py", "--id", "1", env={"BUILD": "stop"})
    assert done.code == 3
    report = ship.run_dir("ship", "1") / "report.md"
    assert report.read_text() == (
        "# ship/1, attempt 1: stopped (exit 3)\n"
        '- plan: succeeded, ran (attempt 1) {"doc": "docs/plan.md"}\n'
        "- build: stopped, ran (attempt 1) null\n"
        "stage: build\n"
        "why: nothing built yet\n"
        "go on: awf run ship.py --id 1 --continue\n"
        "value: null\n"
    )
    assert "  report:  .awf/runs/ship/1/report.md" in done.stderr
    # The continue reuses plan, and its report says so, with the value.
    again = ship.awf("run", "ship.py", "--id", "1", "--continue", "--json")
    assert again.code == 0
    assert again.out["report"] == str(report)
    text = report.read_text()
    assert "attempt 2: completed (exit 0)" in text
    assert '- plan: succeeded, reused (attempt 1) {"doc": "docs/plan.md"}' in text
    assert 'value: {"branch": "fix/1"}' in text and "go on: None" in text
    # Every attempt's text stays in run.jsonl.
    assert [line["attempt"] for line in report_lines(ship, "1")] == [1, 2]
    assert report_lines(ship, "1")[0]["text"].startswith("# ship/1, attempt 1: stopped")
    logs = ship.awf("logs", "ship/1")
    assert "#1 report: report.md, 7 lines: # ship/1, attempt 1: stopped (exit 3)" in logs.stdout


@pytest.mark.parametrize(
    ("build", "outcome", "code"), [("throw", "failed", 1), ("ok", "completed", 0), ("stop", "stopped", 3)]
)
def test_the_report_is_called_for_the_ending(ship: Project, build: str, outcome: str, code: int):
    done = ship.awf("run", "ship.py", "--id", build, env={"BUILD": build})
    assert done.code == code
    assert f"attempt 1: {outcome} (exit {code})" in (ship.run_dir("ship", build) / "report.md").read_text()


def test_the_report_of_a_timed_out_attempt(ship: Project):
    done = ship.awf("run", "ship.py", "--id", "t", "--timeout", "2s", env={"BUILD": "wait"})
    assert done.code == 1
    text = (ship.run_dir("ship", "t") / "report.md").read_text()
    assert "attempt 1: timed-out (exit 1)" in text and "stage: build" in text
    assert "go on: awf run ship.py --id t --continue" in text


def test_the_report_of_a_cancelled_attempt(ship: Project):
    process = ship.start("run", "ship.py", "--id", "c", env={"BUILD": "wait"})
    ship.wait_for(ship.path / "waiting")
    send(process, signal.SIGINT)
    done = finish(process)
    assert done.code == 130
    text = (ship.run_dir("ship", "c") / "report.md").read_text()
    assert "attempt 1: cancelled (exit 130)" in text and "- build: failed, ran" in text


def test_an_attempt_that_writes_no_report_removes_the_last_and_keeps_its_text_in_run_jsonl(ship: Project):
    assert ship.awf("run", "ship.py", "--id", "n", env={"BUILD": "stop"}).code == 3
    report = ship.run_dir("ship", "n") / "report.md"
    first = report.read_text()
    done = ship.awf("run", "ship.py", "--id", "n", "--continue", "--json", env={"REPORT": "none"})
    assert done.code == 0 and done.out["report"] is None
    assert not report.exists()
    assert "report:" not in done.stderr
    lines = report_lines(ship, "n")
    assert lines[0]["text"] == first.rstrip("\n") and lines[1]["text"] is None


def test_a_report_that_raises_is_a_line_of_the_closing_block_and_never_changes_the_ending(ship: Project):
    done = ship.awf("run", "ship.py", "--id", "r", env={"BUILD": "stop", "REPORT": "raise"})
    assert done.code == 3
    assert "■ ship/r stopped in build (attempt 1, exit 3)" in done.stderr
    assert "  report:  none: report raised KeyError at ship.py:11: 'summary'" in done.stderr
    assert "Traceback" not in done.stderr
    out = json.loads((ship.run_dir("ship", "r") / "out.json").read_text())
    assert out["outcome"] == "stopped" and out["report"] is None
    assert out["report_error"] == "report raised KeyError at ship.py:11: 'summary'"
    assert not (ship.run_dir("ship", "r") / "report.md").exists()
    [line] = report_lines(ship, "r")
    assert line["text"] is None and line["error"] == out["report_error"]
    assert "#1 report: none: report raised KeyError at ship.py:11: 'summary'" in ship.awf("logs", "ship/r").stdout


def test_awf_runs_points_at_the_report(ship: Project):
    assert ship.awf("run", "ship.py", "--id", "p", env={"BUILD": "stop"}).code == 3
    report = ship.run_dir("ship", "p") / "report.md"
    shown = ship.awf("runs", "ship/p")
    assert shown.code == 0 and f"  report:   {report}" in shown.stdout
    assert ship.awf("runs", "ship/p", "--json").out["report"] == str(report)


def test_awf_testing_gives_the_report_of_the_attempt(ship: Project, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BUILD", "stop")
    workflow = load_workflow(str(ship.path / "ship.py"))
    run = run_workflow(workflow, cwd=ship.path, earlier={"stages": {"plan": {"doc": "docs/plan.md"}}})
    assert run.ending.outcome == "stopped"
    assert run.report is not None and run.report.startswith("# ship/")
    assert '- plan: succeeded, reused (attempt 1) {"doc": "docs/plan.md"}' in run.report
    assert run.report_error is None
    monkeypatch.setenv("REPORT", "raise")
    broken = run_workflow(workflow, cwd=ship.path)
    assert broken.ending.outcome == "stopped" and broken.report is None
    assert broken.report_error == "report raised KeyError at ship.py:11: 'summary'"
