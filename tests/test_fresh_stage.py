"""fresh=True: a stage that runs on every attempt, whose changed value redoes the stages after it."""

from __future__ import annotations

from conftest import Project

FLOW = """
from pathlib import Path

import awf

TEXT = {"type": "string"}


def work(wf, stage):
    Path(f"ran-{stage}-{wf.attempt}").touch()
    if Path(f"stop-{stage}").exists():
        wf.stop(f"{stage} needs a person")
    return f"{stage} of attempt {wf.attempt}"


def branch(wf):
    Path(f"ran-open-{wf.attempt}").touch()
    return Path("branch").read_text().strip()


@awf.workflow(name="flow", description="Plan, check, build, ship.", version="1.0.0")
async def flow(wf):
    await wf.stage("plan", lambda: work(wf, "plan"), result=TEXT)
    await wf.stage("open", lambda: branch(wf), result=TEXT, fresh=True)
    await wf.stage("build", lambda: work(wf, "build"), result=TEXT)
    return await wf.stage("ship", lambda: work(wf, "ship"), result=TEXT)
"""


def ran(project: Project, stage: str, attempt: int) -> bool:
    return (project.path / f"ran-{stage}-{attempt}").exists()


def stopped_in_ship(project: Project) -> None:
    project.write("flow.py", FLOW)
    project.write("branch", "main")
    (project.path / "stop-ship").touch()
    assert project.awf("run", "flow.py", "--id", "r1").code == 3


def test_a_fresh_stage_runs_on_every_attempt_and_an_equal_value_leaves_the_rest_reused(project: Project):
    stopped_in_ship(project)
    result = project.awf("run", "flow.py", "--id", "r1", "--continue", "--json")
    assert result.code == 3
    assert ran(project, "open", 2) and not ran(project, "plan", 2) and not ran(project, "build", 2)
    assert [(s["stage"], s["how"]) for s in result.out["stages"]] == [
        ("plan", "reused"),
        ("open", "ran"),
        ("build", "reused"),
        ("ship", "ran"),
    ]
    record = project.stage("flow", "r1", "open")
    assert record is not None and record["attempt"] == 2 and record["value"] == "main"
    starts = [line for line in project.log("flow", "r1") if line["kind"] == "start-point" and line["attempt"] == 2]
    assert [(line["stage"], line["why"]) for line in starts] == [("ship", "stopped in attempt 1")]


def test_a_changed_fresh_value_makes_the_stage_after_it_the_start_point_and_says_which(project: Project):
    stopped_in_ship(project)
    project.write("branch", "fix/212")
    result = project.awf("run", "flow.py", "--id", "r1", "--continue", "--json")
    assert result.code == 3
    assert ran(project, "build", 2) and not ran(project, "plan", 2)
    said = """fresh stage open's value changed since attempt 1 ("main" → "fix/212"): the stages after it run again"""
    assert said in result.stderr
    starts = [line for line in project.log("flow", "r1") if line["kind"] == "start-point" and line["attempt"] == 2]
    assert [(line["stage"], line["why"]) for line in starts] == [("build", "fresh stage open's value changed")]
    logs = project.awf("logs", "flow/r1")
    assert "start point: build (fresh stage open's value changed)" in logs.stdout
    # The fresh stage's new record is current; a continue with the same value reuses build.
    again = project.awf("run", "flow.py", "--id", "r1", "--continue")
    assert again.code == 3 and ran(project, "open", 3) and not ran(project, "build", 3)


def test_plan_marks_a_fresh_stage_as_one_that_runs(project: Project):
    stopped_in_ship(project)
    preview = project.awf("run", "flow.py", "--id", "r1", "--continue", "--plan")
    assert preview.code == 0
    assert "⟳ open   runs (fresh=True); if its value changes, the stages after it run again" in preview.stdout
    assert "↺ build  reuse: succeeded in attempt 1" in preview.stdout
    assert not ran(project, "open", 2)


def test_fresh_must_be_a_bool(project: Project):
    project.write(
        "odd.py",
        """
        import awf

        @awf.workflow(name="odd", description="A fresh that is not a bool.", version="1.0.0")
        async def odd(wf):
            await wf.stage("check", lambda: None, fresh="yes")
        """,
    )
    result = project.awf("run", "odd.py", "--id", "o1", "--json")
    assert result.code == 1
    assert result.out["reason"] == "stage check: fresh must be True or False, not 'yes'"
