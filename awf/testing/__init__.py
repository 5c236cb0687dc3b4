"""Test a workflow, and its second attempt, with no agents and no cost.

    from awf.testing import answer, reply, run_workflow

    def test_a_continue_reuses_plan_and_implement_and_only_the_review_runs_again():
        run = run_workflow(fix_issue, args={"issue": "#212: dates before 1970 parse as null"},
                           earlier={"stages": {"plan": PLAN_VALUE, "implement": BUILT_VALUE}},
                           agents={"reviewer": answer(VERDICT, {"approved": True, "findings": []})})
        assert run.value == {"approved": True, "findings": []}
        assert [agent.key for agent in run.agents] == ["reviewer"]

`run_workflow` runs the real engine on a real run folder in a temporary directory; every agent,
whatever its runtime, is scripted, and its turns go through the real answer channel, schema
checks, recovery prompt and record. `run_twice` runs a workflow and then continues it over the
first attempt's records. `recorded(PATH)` turns a run on disk into `earlier=`. A mistake in the
test (an agent with no script, a schema that is not the turn's, a stall) raises `Failure`.
See docs/testing.md.
"""

from __future__ import annotations

from .earlier import recorded
from .result import Agent, Ending, Log, NotCompleted, Run, Stage
from .runner import STALL, run_twice, run_twice_async, run_workflow, run_workflow_async
from .scripts import Failure, Reply, Turn, answer, reply

__all__ = [
    "STALL",
    "Agent",
    "Ending",
    "Failure",
    "Log",
    "NotCompleted",
    "Reply",
    "Run",
    "Stage",
    "Turn",
    "answer",
    "recorded",
    "reply",
    "run_twice",
    "run_twice_async",
    "run_workflow",
    "run_workflow_async",
]
