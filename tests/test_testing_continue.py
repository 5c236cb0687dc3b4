"""Continuing in a test: `earlier`, a start part-way, the two-attempt helper, a real run's records,
the result's reading of the attempt, and the async twin."""

from __future__ import annotations

import asyncio
import inspect
import signal
from pathlib import Path
from typing import Literal

import pytest
from conftest import Project
from testing_workflows import (
    APPROVED,
    BUILT_VALUE,
    ISSUE,
    PLAN,
    PLAN_VALUE,
    VERDICT,
    breaks,
    checks,
    fix_issue,
    remembers,
    returns,
)

import awf
from awf.engine.errors import Stop
from awf.engine.loader import load_workflow
from awf.testing import NotCompleted, answer, recorded, reply, run_twice, run_workflow, run_workflow_async

EXEC_FIX_ISSUE = Path(__file__).parent / "agents" / "fix_issue.py"


def test_a_continue_reuses_plan_and_implement_and_only_the_review_runs_again():
    run = run_workflow(
        fix_issue,
        args={"issue": "#212: dates before 1970 parse as null"},
        earlier={"stages": {"plan": PLAN_VALUE, "implement": BUILT_VALUE}},
        agents={"reviewer": answer(VERDICT, {"approved": True, "findings": []})},
    )
    assert run.value == {"approved": True, "findings": []}
    assert [agent.key for agent in run.agents] == ["reviewer"]
    assert "4be1c07 on fix/212" in run.turns_of("reviewer")[0].prompt
    assert run.attempt == 2
    assert [(stage.name, stage.how, stage.attempt) for stage in run.stages] == [
        ("plan", "reused", 1),
        ("implement", "reused", 1),
        ("review", "ran", 2),
    ]
    assert (run.record_dir / "stages" / "review.json").exists()


def test_a_whole_run_from_the_first_stage():
    run = run_workflow(
        fix_issue,
        args={"issue": ISSUE},
        agents={
            "planner": answer(PLAN, PLAN_VALUE),
            "builder": answer(BUILT_VALUE_SCHEMA, BUILT_VALUE),
            "reviewer": answer(VERDICT, APPROVED),
        },
    )
    assert run.value == APPROVED
    assert [agent.key for agent in run.agents] == ["planner", "builder", "reviewer"]
    assert [agent.runtime for agent in run.agents] == [
        {"harness": "claude"},
        {"harness": "claude"},
        {"harness": "codex"},
    ]
    assert run.turns_of("builder")[0].prompt == (
        "On fix/212, carry out:\nParse years before 1970.\nAdd a test.\nCommit, and give the commit."
    )
    assert [(stage.name, stage.how, stage.summary) for stage in run.stages] == [
        ("plan", "ran", "fix/212"),
        ("implement", "ran", "4be1c07"),
        ("review", "ran", None),
    ]


BUILT_VALUE_SCHEMA = {"type": "object", "required": ["commit"], "properties": {"commit": {"type": "string"}}}


def test_value_raises_with_the_workflows_own_error_as_its_cause():
    run = run_workflow(breaks)
    assert (run.ending.outcome, run.ending.exit_code, run.ending.stage) == ("failed", 1, "parse")
    assert run.ending.reason == "ValueError: the parser broke"
    assert run.ending.go_on.startswith(f"awf run {Path(breaks.source_file)}:breaks --id ")
    with pytest.raises(NotCompleted, match="attempt 1 did not complete: it ended failed in parse") as caught:
        run.value  # noqa: B018
    assert isinstance(caught.value.__cause__, ValueError)
    assert [(log.message, log.stage, log.data) for log in run.logs] == [("about to break", "parse", {"step": 1})]
    assert run.stage("parse").outcome == "failed" and run.stage("parse").reason == "ValueError: the parser broke"


def test_a_stop_is_the_cause_of_a_stopped_attempt():
    run = run_workflow(
        fix_issue,
        args={"issue": ISSUE},
        earlier={"stages": {"plan": PLAN_VALUE, "implement": BUILT_VALUE}},
        agents={"reviewer": reply.blocked("cannot see the branch")},
    )
    assert (run.ending.outcome, run.ending.stage) == ("stopped", "review")
    assert run.ending.reason == "no review: cannot see the branch"
    with pytest.raises(NotCompleted) as caught:
        run.value  # noqa: B018
    assert isinstance(caught.value.__cause__, Stop)


def test_from_stage_without_values_stops_with_what_it_needs_and_with_them_completes():
    run = run_workflow(fix_issue, args={"issue": ISSUE}, from_stage="review")
    assert run.ending.outcome == "stopped"
    assert run.needs == {"plan": PLAN, "implement": BUILT_VALUE_SCHEMA}
    assert "--from-stage review --values values.json" in run.ending.go_on
    assert run.agents == [] and run.stages == []

    run = run_workflow(
        fix_issue,
        args={"issue": ISSUE},
        from_stage="review",
        values={"plan": PLAN_VALUE, "implement": BUILT_VALUE},
        agents={"reviewer": answer(VERDICT, APPROVED)},
    )
    assert run.value == APPROVED
    assert [(stage.name, stage.how) for stage in run.stages] == [
        ("plan", "provided"),
        ("implement", "provided"),
        ("review", "ran"),
    ]
    assert run.needs is None


def test_from_stage_over_earlier_redoes_that_stage_and_every_one_after():
    run = run_workflow(
        fix_issue,
        args={"issue": ISSUE},
        from_stage="implement",
        earlier={"stages": {"plan": PLAN_VALUE, "implement": {"commit": "old"}, "review": APPROVED}},
        agents={"builder": answer(BUILT_VALUE_SCHEMA, BUILT_VALUE), "reviewer": answer(VERDICT, APPROVED)},
    )
    assert [(stage.name, stage.how) for stage in run.stages] == [
        ("plan", "reused"),
        ("implement", "ran"),
        ("review", "ran"),
    ]
    assert "4be1c07" in run.turns_of("reviewer")[0].prompt


def test_the_second_attempt_catches_a_variable_assigned_inside_a_stage():
    first, second = run_twice(remembers)
    assert first.value == "built on fix/7"
    assert [(stage.name, stage.how) for stage in second.stages] == [("plan", "reused"), ("build", "ran")]
    with pytest.raises(NotCompleted, match="ended failed in build: KeyError: 'branch'") as caught:
        second.value  # noqa: B018
    assert isinstance(caught.value.__cause__, KeyError)


def test_a_workflow_that_returns_what_later_stages_need_passes_its_second_attempt():
    first, second = run_twice(returns)
    assert second.value == first.value == "built on fix/7"
    assert (first.attempt, second.attempt) == (1, 2)
    assert second.record_dir == first.record_dir


def test_a_second_attempt_after_a_stop_is_a_plain_continue_and_a_list_goes_on_across_both():
    first, second = run_twice(
        fix_issue,
        args={"issue": ISSUE},
        agents={
            "planner": answer(PLAN, PLAN_VALUE),
            "builder": answer(BUILT_VALUE_SCHEMA, BUILT_VALUE),
            "reviewer": [reply.silent(), answer(VERDICT, APPROVED)],
        },
    )
    assert (first.ending.outcome, first.ending.stage) == ("stopped", "review")
    assert second.value == APPROVED
    # Reused stages open no agent.
    assert [agent.key for agent in second.agents] == ["reviewer"]


def test_a_check_between_stages_stops_again_on_the_continue_and_says_which_stage_to_redo():
    first, second = run_twice(checks, agents={"planner": answer({"type": "object"}, {"ok": False})})
    assert first.ending.reason == second.ending.reason == "the plan is not good enough"
    assert second.agents == []
    assert second.ending.go_on.endswith("--from-stage plan")


def test_recorded_turns_a_real_run_into_earlier(project: Project):
    stopped = project.awf("run", str(EXEC_FIX_ISSUE), "--id", "212", "--", ISSUE, env={"REVIEWER_AWAY": "1"})
    assert stopped.code == 3, stopped.stderr
    earlier = recorded(project.run_dir("fix-issue", "212"))
    assert earlier["stages"] == {"plan": PLAN_VALUE, "implement": BUILT_VALUE}
    assert earlier["records"]["review"]["outcome"] == "stopped"

    workflow = load_workflow(str(EXEC_FIX_ISSUE))
    verdict = inspect.getmodule(workflow.run).Verdict  # its results are pydantic models
    run = run_workflow(workflow, args={"issue": ISSUE}, earlier=earlier, agents={"reviewer": answer(verdict, APPROVED)})
    assert run.value == verdict(**APPROVED)
    assert [agent.key for agent in run.agents] == ["reviewer"]
    assert [(stage.name, stage.how, stage.attempt) for stage in run.stages] == [
        ("plan", "reused", 1),
        ("implement", "reused", 1),
        ("review", "ran", 2),
    ]
    assert "4be1c07 on fix/212" in run.turns_of("reviewer")[0].prompt


def test_recorded_refuses_a_folder_that_is_not_a_run(tmp_path: Path):
    with pytest.raises(ValueError, match="is not a run's folder"):
        recorded(tmp_path)


def test_the_async_twin_and_the_callers_signal_handlers():
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    options = {
        "args": {"issue": ISSUE},
        "earlier": {"stages": {"plan": PLAN_VALUE, "implement": BUILT_VALUE}},
        "agents": {"reviewer": answer(VERDICT, APPROVED)},
    }
    assert run_workflow(fix_issue, **options).value == APPROVED
    assert {number: signal.getsignal(number) for number in before} == before

    async def an_async_test():
        return await run_workflow_async(fix_issue, **options)

    assert asyncio.run(an_async_test()).value == APPROVED
    assert {number: signal.getsignal(number) for number in before} == before


def _versioned(version: str, on_change: Literal["stop", "redo"] = "stop") -> awf.Workflow[str]:
    @awf.workflow(name="versioned", description="A stage with a version of its own.")
    async def versioned(wf: awf.Context) -> str:
        plan = await wf.stage(
            "plan", lambda: f"plan {version}", result={"type": "string"}, version=version, on_change=on_change
        )
        return await wf.stage("build", lambda: f"build of {plan}", result={"type": "string"})

    return versioned


def test_a_stage_version_passes_through_and_a_continue_over_another_stops_or_redoes():
    first = run_workflow(_versioned("1"))
    record = first.stage("plan").record
    assert record is not None and record["stage_version"] == "1"
    earlier = recorded(first.record_dir)
    assert run_workflow(_versioned("1"), earlier=earlier).stage("plan").how == "reused"
    stopped = run_workflow(_versioned("2"), earlier=earlier)
    assert stopped.ending.outcome == "stopped" and "version 1 → 2" in (stopped.ending.reason or "")
    assert stopped.ending.go_on and stopped.ending.go_on.endswith("--from-stage plan")
    redone = run_workflow(_versioned("2", on_change="redo"), earlier=earlier)
    assert redone.value == "build of plan 2"
    assert [(stage.name, stage.how) for stage in redone.stages] == [("plan", "ran"), ("build", "ran")]
