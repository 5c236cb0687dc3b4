"""awf.testing speaks types: scripted answers, earlier stages and values given as instances or
dicts, and run.value an instance, for the seeds' fix-issue written with pydantic models."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from awf.engine.loader import load_workflow
from awf.testing import Failure, answer, run_workflow

FIX_ISSUE = load_workflow(str(Path(__file__).parent / "agents" / "fix_issue.py"))
TYPES = inspect.getmodule(FIX_ISSUE.run)
Plan, Built, Verdict = TYPES.Plan, TYPES.Built, TYPES.Verdict
ISSUE = "#212: dates before 1970 parse as null"
PLAN = Plan(branch="fix/212", steps=["Parse years before 1970.", "Add a test."])
BUILT = Built(commit="4be1c07")


def test_a_continue_reuses_plan_and_implement_given_as_instances_and_only_the_review_runs_again():
    run = run_workflow(
        FIX_ISSUE,
        args={"issue": ISSUE},
        earlier={"stages": {"plan": PLAN, "implement": BUILT}},
        agents={"reviewer": answer(Verdict, Verdict(approved=True, findings=[]))},
    )
    assert run.value == Verdict(approved=True, findings=[])
    assert [agent.key for agent in run.agents] == ["reviewer"]
    assert "4be1c07 on fix/212" in run.turns_of("reviewer")[0].prompt
    assert run.stage("plan").value == {"branch": "fix/212", "steps": ["Parse years before 1970.", "Add a test."]}


def test_values_given_as_instances_or_dicts_start_the_run_part_way():
    run = run_workflow(
        FIX_ISSUE,
        args={"issue": ISSUE},
        from_stage="review",
        values={"plan": PLAN, "implement": {"commit": "4be1c07"}},
        agents={"reviewer": answer(Verdict, {"approved": False, "findings": ["no test"]})},
    )
    assert run.value == Verdict(approved=False, findings=["no test"])
    assert [stage.how for stage in run.stages] == ["provided", "provided", "ran"]


def test_a_scripted_answer_that_does_not_fit_the_type_fails_the_test_naming_the_field():
    with pytest.raises(Failure, match=r"agent planner, turn 1 .*: \$\.steps: Input should be a valid list"):
        run_workflow(FIX_ISSUE, args={"issue": ISSUE}, agents={"planner": answer(Plan, {"branch": "b", "steps": 3})})


def test_a_script_that_answers_with_another_schema_than_the_turns_fails_the_test():
    with pytest.raises(Failure, match="the script's schema is not the one the turn asks with"):
        run_workflow(FIX_ISSUE, args={"issue": ISSUE}, agents={"planner": answer(Built, BUILT)})
