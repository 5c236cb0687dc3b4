"""--skip-stage: a stage whose work is not run, taking its value from --values or its record."""

from __future__ import annotations

import json

from conftest import Project

FLOW = """
from pathlib import Path

import awf

TEXT = {"type": "string"}


def work(wf, stage, value=True):
    Path(f"ran-{stage}-{wf.attempt}").touch()
    return f"{stage} of attempt {wf.attempt}" if value else None


@awf.workflow(name="flow", description="Plan, review, tell, build.", version="1.0.0")
async def flow(wf):
    plan = await wf.stage("plan", lambda: work(wf, "plan"), result=TEXT)
    review = await wf.stage("review", lambda: work(wf, "review"), result=TEXT)
    await wf.stage("tell", lambda: work(wf, "tell", value=False))
    return await wf.stage("build", lambda: f"build on {plan} after {review}", result=TEXT)
"""


def ran(project: Project, stage: str, attempt: int) -> bool:
    return (project.path / f"ran-{stage}-{attempt}").exists()


def no_run(project: Project) -> bool:
    return not (project.path / ".awf" / "runs" / "flow").exists()


def test_a_skipped_stage_takes_the_value_given_with_values_recorded_as_provided(project: Project):
    project.write("flow.py", FLOW)
    project.write("values.json", '{"review": "looked at by hand"}')
    result = project.awf("run", "flow.py", "--id", "r1", "--skip-stage", "review", "--values", "values.json", "--json")
    assert result.code == 0, result.stderr
    assert result.out["value"] == "build on plan of attempt 1 after looked at by hand"
    assert not ran(project, "review", 1) and ran(project, "plan", 1)
    assert [s["how"] for s in result.out["stages"]] == ["ran", "provided", "ran", "ran"]
    record = project.stage("flow", "r1", "review")
    assert record is not None and record["origin"] == "provided" and record["value"] == "looked at by hand"


def test_a_skipped_stage_keeps_its_recorded_value_recorded_as_skipped(project: Project):
    project.write("flow.py", FLOW)
    assert project.awf("run", "flow.py", "--id", "r1").code == 0
    result = project.awf(
        "run", "flow.py", "--id", "r1", "--continue", "--from-stage", "plan", "--skip-stage", "review", "--json"
    )
    assert result.code == 0, result.stderr
    assert ran(project, "plan", 2) and not ran(project, "review", 2) and ran(project, "tell", 2)
    assert result.out["value"] == "build on plan of attempt 2 after review of attempt 1"
    assert [s["how"] for s in result.out["stages"]] == ["ran", "skipped", "ran", "ran"]
    record = project.stage("flow", "r1", "review")
    assert record is not None
    assert (record["origin"], record["attempt"], record["value_of"]) == ("skipped", 2, 1)
    assert "↷ review  skipped (--skip-stage), with the value of attempt 1" in result.stderr
    assert "4 stages (3 ran, 1 skipped)" in result.stderr
    start = [line for line in project.log("flow", "r1") if line["kind"] == "attempt-start"][-1]
    assert start["flags"]["skip_stage"] == ["review"]
    runs = project.awf("runs", "flow/r1")
    assert "--continue --from-stage plan --skip-stage review" in runs.stdout
    logs = project.awf("logs", "flow/r1")
    assert "↷ review  skipped (--skip-stage), with the value of attempt 1" in logs.stdout


def test_a_skipped_stage_with_no_result_needs_no_value(project: Project):
    project.write("flow.py", FLOW)
    result = project.awf("run", "flow.py", "--id", "r1", "--skip-stage", "tell", "--json")
    assert result.code == 0, result.stderr
    assert not ran(project, "tell", 1) and ran(project, "review", 1)
    record = project.stage("flow", "r1", "tell")
    assert record is not None and record["origin"] == "skipped" and "value_of" not in record
    assert "↷ tell  skipped (--skip-stage)\n" in result.stderr


def test_a_skipped_stage_with_a_result_and_no_value_is_refused_before_anything_runs(project: Project):
    project.write("flow.py", FLOW)
    result = project.awf("run", "flow.py", "--id", "r1", "--skip-stage", "review")
    assert result.code == 2
    assert result.stderr == (
        "awf: --skip-stage review: it has a result and no value to take: no succeeded record, and no --values;"
        " give its value in a JSON file by stage name with --values FILE\n"
    )
    assert no_run(project) and not ran(project, "plan", 1)


def test_a_skip_stage_that_cannot_be_is_refused(project: Project):
    project.write("flow.py", FLOW)
    typo = project.awf("run", "flow.py", "--id", "r1", "--skip-stage", "reveiw")
    assert typo.code == 2 and "awf: --skip-stage reveiw: no such stage; did you mean review?" in typo.stderr
    bad = project.awf("run", "flow.py", "--id", "r1", "--skip-stage", "Review")
    assert bad.code == 2 and bad.stderr.startswith("awf: --skip-stage Review: stage name 'Review'")
    project.write("values.json", '{"plan": "by hand"}')
    other = project.awf("run", "flow.py", "--id", "r1", "--skip-stage", "tell", "--values", "values.json")
    assert other.code == 2
    assert "gives plan, which --skip-stage does not name" in other.stderr
    assert no_run(project)
    assert project.awf("run", "flow.py", "--id", "r1").code == 0
    same = project.awf("run", "flow.py", "--id", "r1", "--continue", "--from-stage", "review", "--skip-stage", "review")
    assert same.code == 2 and "--skip-stage review is the --from-stage" in same.stderr


def test_plan_shows_a_skipped_stage(project: Project):
    project.write("flow.py", FLOW)
    assert project.awf("run", "flow.py", "--id", "r1").code == 0
    preview = project.awf(
        "run", "flow.py", "--id", "r1", "--continue", "--from-stage", "build", "--skip-stage", "review", "--plan"
    )
    assert preview.code == 0, preview.stderr
    assert "↷ review  skipped (--skip-stage), with the value of attempt 1" in preview.stdout
    data = json.loads(
        project.awf(
            "run",
            "flow.py",
            "--id",
            "r1",
            "--continue",
            "--from-stage",
            "build",
            "--skip-stage",
            "review",
            "--plan",
            "--json",
        ).stdout
    )
    assert [s["how"] for s in data["stages"]] == ["reused", "skipped", "reused"]


FAN_OUT = """
import awf

TEXT = {"type": "string"}


@awf.workflow(name="fan", description="Reviews.", version="1.0.0")
async def fan(wf):
    return await wf.each("reviews", ["a", "b"], lambda item: f"review {item}", result=TEXT, key=lambda item: item)
"""


def test_a_fan_out_is_not_skipped(project: Project):
    project.write("fan.py", FAN_OUT)
    skipped = project.awf("run", "fan.py", "--id", "f1", "--skip-stage", "reviews")
    assert skipped.code == 2
    assert skipped.stderr.startswith("awf: --skip-stage reviews: a fan-out is not skipped")
