"""The stage plan decides, for each stage entered, whether to reuse, run or stop."""

from __future__ import annotations

from pathlib import Path

from awf.engine.plan import Halt, Reuse, Run, StagePlan
from awf.engine.schema import load_schema
from awf.record.errors import RecordError

STRING = load_schema({"type": "string"}, None, "test")
OBJECT = load_schema({"type": "object", "required": ["doc"]}, None, "test")


def record(
    stage: str,
    value: object = "v",
    *,
    outcome: str = "succeeded",
    attempt: int = 1,
    version: str | None = "1.0.0",
    has_result: bool = True,
) -> dict[str, object]:
    return {
        "version": 1,
        "stage": stage,
        "outcome": outcome,
        "origin": "ran",
        "attempt": attempt,
        "ended": "2026-01-01T00:00:00+00:00",
        "has_result": has_result,
        "value": value,
        "workflow_version": version,
    }


def test_stages_with_a_succeeded_record_are_reused_until_the_first_without_one():
    plan = StagePlan(
        {
            "plan": record("plan", "p"),
            "build": record("build", outcome="failed", attempt=2),
            "review": record("review", "r"),
        },
        "1.0.0",
    )
    assert plan.enter("plan", STRING) == Reuse("p", plan.records["plan"], "reused", "p")
    decision = plan.enter("build", STRING)
    assert isinstance(decision, Run) and decision.start_point and decision.why == "failed in attempt 2"
    # From the start point on, every stage runs, even one that succeeded before.
    assert plan.enter("review", STRING) == Run(False)


def test_a_stage_with_no_record_is_the_start_point():
    plan = StagePlan({}, None)
    assert plan.enter("plan", None) == Run(True, "no record")


def test_from_stage_runs_that_stage_even_when_it_succeeded():
    plan = StagePlan({"plan": record("plan"), "build": record("build")}, "1.0.0", from_stage="build")
    assert isinstance(plan.enter("plan", STRING), Reuse)
    assert plan.enter("build", STRING) == Run(True, "--from-stage")


def test_a_stage_before_from_stage_with_no_record_needs_a_value():
    plan = StagePlan({}, None, from_stage="build")
    decision = plan.enter("plan", OBJECT)
    assert isinstance(decision, Halt) and decision.needs and "--values" in decision.reason


def test_a_record_of_another_major_version_stops_at_that_stage():
    plan = StagePlan({"plan": record("plan", version="1.4.0")}, "2.0.0")
    decision = plan.enter("plan", STRING)
    assert isinstance(decision, Halt) and decision.redo == "plan"
    assert "1.4.0" in decision.reason and "2.0.0" in decision.reason


def test_a_minor_version_change_reuses_but_under_0x_the_minor_counts():
    assert isinstance(StagePlan({"plan": record("plan", version="1.0.0")}, "1.7.2").enter("plan", STRING), Reuse)
    assert isinstance(StagePlan({"plan": record("plan", version="0.3.0")}, "0.4.0").enter("plan", STRING), Halt)


def test_a_schema_that_rejects_the_recorded_value_stops_naming_the_problem():
    plan = StagePlan({"plan": record("plan", {"title": "x"})}, None)
    decision = plan.enter("plan", OBJECT)
    assert isinstance(decision, Halt) and "doc" in decision.reason and decision.redo == "plan"


def test_a_stage_that_gained_or_lost_a_result_stops():
    gained = StagePlan({"notify": record("notify", None, has_result=False)}, None).enter("notify", STRING)
    lost = StagePlan({"plan": record("plan", "x")}, None).enter("plan", None)
    assert isinstance(gained, Halt) and "now declares a result" in gained.reason
    assert isinstance(lost, Halt) and "no longer declares a result" in lost.reason


def test_an_unreadable_record_stops_at_its_stage_naming_the_file():
    error = RecordError(Path("stages/plan.json"), "is not JSON")
    decision = StagePlan({"plan": error}, None).enter("plan", STRING)
    assert isinstance(decision, Halt) and "stages/plan.json" in decision.reason


def test_never_reached_lists_recorded_stages_not_entered():
    plan = StagePlan({"plan": record("plan"), "build": record("build")}, None, from_stage="biuld")
    plan.enter("plan", STRING)
    assert plan.never_reached() == ["build"]
