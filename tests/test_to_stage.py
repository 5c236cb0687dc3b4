"""--to-stage and --only-stage: an attempt that ends, stopped, once a named stage has succeeded."""

from __future__ import annotations

import json

from conftest import Project

FLOW = """
from pathlib import Path

import awf

TEXT = {"type": "string"}


def work(wf, stage):
    Path(f"ran-{stage}-{wf.attempt}").touch()
    return f"{stage} of attempt {wf.attempt}"


@awf.workflow(name="flow", description="Plan, review, build.", version="1.0.0")
async def flow(wf):
    await wf.stage("plan", lambda: work(wf, "plan"), result=TEXT)
    if not Path("skip-review").exists():
        await wf.stage("review", lambda: work(wf, "review"), result=TEXT)
    return await wf.stage("build", lambda: work(wf, "build"), result=TEXT)
"""


def ran(project: Project, stage: str, attempt: int) -> bool:
    return (project.path / f"ran-{stage}-{attempt}").exists()


def test_to_stage_ends_the_attempt_stopped_once_the_stage_has_succeeded(project: Project):
    project.write("flow.py", FLOW)
    result = project.awf("run", "flow.py", "--id", "r1", "--to-stage", "review", "--json")
    assert result.code == 3, result.stderr
    assert result.out["outcome"] == "stopped" and result.out["stage"] is None
    assert result.out["reason"] == "--to-stage review: the attempt ends once it has succeeded"
    assert result.out["go_on"] == "awf run flow.py --id r1 --continue"
    assert ran(project, "plan", 1) and ran(project, "review", 1) and not ran(project, "build", 1)
    assert project.stage("flow", "r1", "review")["outcome"] == "succeeded"  # type: ignore[index]
    start = next(line for line in project.log("flow", "r1") if line["kind"] == "attempt-start")
    assert start["flags"]["to_stage"] == "review"
    end = next(line for line in project.log("flow", "r1") if line["kind"] == "attempt-end")
    assert end["outcome"] == "stopped"
    closing = project.awf("run", "flow.py", "--id", "r1", "--continue")
    assert closing.code == 0, closing.stderr
    assert ran(project, "build", 2) and not ran(project, "review", 2)


def test_the_closing_block_and_awf_runs_say_where_and_why_it_stopped(project: Project):
    project.write("flow.py", FLOW)
    result = project.awf("run", "flow.py", "--id", "r1", "--to-stage", "plan")
    assert result.code == 3
    assert "stopped between stages, after plan (attempt 1, exit 3)" in result.stderr
    assert "go on:   awf run flow.py --id r1 --continue" in result.stderr
    runs = project.awf("runs", "flow/r1")
    assert "stopped between stages, after plan" in runs.stdout
    assert "--to-stage plan" in runs.stdout
    assert "--to-stage plan: the attempt ends once it has succeeded" in runs.stdout


def test_a_reused_stage_named_by_to_stage_ends_the_attempt_before_any_work(project: Project):
    project.write("flow.py", FLOW)
    assert project.awf("run", "flow.py", "--id", "r1", "--to-stage", "review").code == 3
    result = project.awf("run", "flow.py", "--id", "r1", "--continue", "--to-stage", "plan", "--json")
    assert result.code == 3 and result.out["stages"][0]["how"] == "reused"
    assert not ran(project, "plan", 2) and not ran(project, "review", 2)


def test_only_stage_redoes_one_stage_and_leaves_the_rest_to_a_continue(project: Project):
    project.write("flow.py", FLOW)
    assert project.awf("run", "flow.py", "--id", "r1").code == 0
    result = project.awf("run", "flow.py", "--id", "r1", "--continue", "--only-stage", "review", "--json")
    assert result.code == 3, result.stderr
    assert [(s["stage"], s["how"]) for s in result.out["stages"]] == [("plan", "reused"), ("review", "ran")]
    assert ran(project, "review", 2) and not ran(project, "build", 2)
    start = [line for line in project.log("flow", "r1") if line["kind"] == "attempt-start"][-1]
    assert start["flags"]["from_stage"] == "review" and start["flags"]["to_stage"] == "review"
    # The redo made build's record stale: the continue runs it, on the review just made.
    going_on = project.awf("run", "flow.py", "--id", "r1", "--continue", "--json")
    assert going_on.code == 0 and going_on.out["value"] == "build of attempt 3"


def test_only_stage_goes_alone(project: Project):
    project.write("flow.py", FLOW)
    result = project.awf("run", "flow.py", "--id", "r1", "--only-stage", "plan", "--to-stage", "build")
    assert result.code == 2
    assert result.stderr.startswith("awf: --only-stage is --from-stage STAGE --to-stage STAGE")
    assert not (project.path / ".awf" / "runs" / "flow").exists()


def test_a_to_stage_the_file_names_nowhere_is_refused_before_anything_runs(project: Project):
    project.write("flow.py", FLOW)
    result = project.awf("run", "flow.py", "--id", "r1", "--to-stage", "reveiw")
    assert result.code == 2
    said = "awf: --to-stage reveiw: no such stage; did you mean review? flow.py names: build, plan, review\n"
    assert result.stderr == said
    assert not (project.path / ".awf" / "runs" / "flow").exists()
    bad = project.awf("run", "flow.py", "--id", "r1", "--to-stage", "Review")
    assert bad.code == 2 and bad.stderr.startswith("awf: --to-stage Review: stage name 'Review'")
    assert "did you mean review?" in bad.stderr


def test_a_to_stage_before_the_from_stage_is_refused(project: Project):
    project.write("flow.py", FLOW)
    assert project.awf("run", "flow.py", "--id", "r1").code == 0
    result = project.awf("run", "flow.py", "--id", "r1", "--continue", "--from-stage", "build", "--to-stage", "plan")
    assert result.code == 2
    assert result.stderr.startswith("awf: --to-stage plan comes before --from-stage build")
    assert len([line for line in project.log("flow", "r1") if line["kind"] == "attempt-start"]) == 1


def test_a_to_stage_the_workflow_never_enters_completes_the_attempt_saying_so(project: Project):
    project.write("flow.py", FLOW)
    (project.path / "skip-review").touch()
    result = project.awf("run", "flow.py", "--id", "r1", "--to-stage", "review", "--json")
    assert result.code == 0, result.stderr
    assert result.out["outcome"] == "completed"
    assert "--to-stage review: the workflow returned without entering it" in result.stderr


def test_plan_says_where_a_to_stage_ends_the_attempt(project: Project):
    project.write("flow.py", FLOW)
    assert project.awf("run", "flow.py", "--id", "r1", "--to-stage", "plan").code == 3
    preview = project.awf("run", "flow.py", "--id", "r1", "--continue", "--to-stage", "review", "--plan")
    assert preview.code == 0, preview.stderr
    assert "the attempt ends stopped (exit 3) once review has succeeded (--to-stage)" in preview.stdout
    data = json.loads(
        project.awf("run", "flow.py", "--id", "r1", "--continue", "--to-stage", "review", "--plan", "--json").stdout
    )
    assert data["to_stage"] == "review"
    assert not ran(project, "review", 2)


FAN_OUT = """
from pathlib import Path

import awf

TEXT = {"type": "string"}


@awf.workflow(name="fan", description="Reviews, then a summary.", version="1.0.0")
async def fan(wf):
    reviews = await wf.each("reviews", ["a", "b"], lambda item: f"review {item}", result=TEXT, key=lambda item: item)
    Path("after-reviews").touch()
    return await wf.stage("sum", lambda: " and ".join(reviews), result=TEXT)
"""


def test_to_stage_on_a_fan_out_ends_the_attempt_once_every_branch_succeeded(project: Project):
    project.write("fan.py", FAN_OUT)
    result = project.awf("run", "fan.py", "--id", "f1", "--to-stage", "reviews", "--json")
    assert result.code == 3, result.stderr
    assert {s["stage"] for s in result.out["stages"]} == {"reviews@a", "reviews@b", "reviews"}
    assert not (project.path / "after-reviews").exists()
    branch = project.awf("run", "fan.py", "--id", "f2", "--to-stage", "reviews@c")
    assert branch.code == 2 and "did you mean reviews?" in branch.stderr
