"""What fails the test, not the workflow: each with a message naming the agent, the turn and the
first line of its prompt, and the attempt's record saying what happened."""

from __future__ import annotations

import json
import re

import pytest
from testing_workflows import APPROVED, BUILT_VALUE, ISSUE, PLAN_VALUE, VERDICT, ask, fix_issue, reviews, sleeps

from awf.testing import Failure, answer, reply, run_workflow

SCHEMA = {"type": "object", "required": ["word"], "properties": {"word": {"type": "string"}}}
OTHER = {"type": "object", "required": ["words"], "properties": {"words": {"type": "array"}}}
WHERE = 'agent helper, turn 1 ("Say hello.")'


def fails(match: str, **options) -> Failure:
    with pytest.raises(Failure, match=re.escape(match)) as caught:
        run_workflow(ask, **options)
    return caught.value


def log_of(root) -> list[dict]:
    [log] = root.glob("*/*/run.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_an_agent_with_no_script(tmp_path):
    failure = fails(
        f"{WHERE}: no script for this agent (the scripts are for: 'planner')",
        agents={"planner": answer("x")},
        run_root=tmp_path,
    )
    assert "give agents={'helper': answer(...)}" in str(failure)
    log = log_of(tmp_path)
    # The turn is recorded failed, saying why, and the attempt ends failed: the record reads true.
    [turn] = [line for line in log if line["kind"] == "turn"]
    assert turn["outcome"] == "failed" and turn["reason"].startswith("awf.testing: " + WHERE)
    [end] = [line for line in log if line["kind"] == "attempt-end"]
    assert end["outcome"] == "failed" and WHERE in end["reason"]


def test_a_script_list_overrun_and_a_list_not_used_up():
    overrun = "agent rev, turn 2 (\"Second look, rev.\"): its script ('rev') has 1 entry, one a turn, and all were used"
    with pytest.raises(Failure, match=re.escape(overrun)):
        run_workflow(reviews, args={"keys": ["rev"]}, agents={"rev": [answer(VERDICT, APPROVED)]})
    three = [answer(VERDICT, APPROVED), answer(VERDICT, APPROVED), reply.silent()]
    left = "agent rev took 2 turns of the 3 its script ('rev') has; never reached: entry 3: reply.silent()"
    with pytest.raises(Failure, match=re.escape(left)) as caught:
        run_workflow(reviews, args={"keys": ["rev"]}, agents={"rev": three})
    assert "(attempt 1 ended completed)" in str(caught.value)


def test_a_list_for_an_agent_that_never_took_a_turn():
    with pytest.raises(
        Failure,
        match=re.escape(
            "the script for 'planner' was never used (no agent planner took a turn): its 1 entry was never reached"
        ),
    ):
        run_workflow(
            fix_issue,
            args={"issue": ISSUE},
            earlier={"stages": {"plan": PLAN_VALUE, "implement": BUILT_VALUE}},
            agents={"reviewer": answer(VERDICT, APPROVED), "planner": [answer("never")]},
        )


def test_a_schema_that_is_not_the_turns():
    fails(
        f"{WHERE}: the script's schema is not the one the turn asks with; the turn asks for {{word: string}}, "
        "the script answers {words: [any]}",
        args={"schema": SCHEMA},
        agents={"helper": answer(OTHER, {"words": []})},
    )
    fails(
        f"{WHERE}: the turn asks for JSON that fits {{word: string}}, and the script answers text",
        args={"schema": SCHEMA},
        agents={"helper": answer("hello")},
    )
    fails(
        f"{WHERE}: the turn asks for text (it has no schema), and the script answers with a schema",
        agents={"helper": answer(SCHEMA, {"word": "hello"})},
    )


def test_a_scripted_value_its_schema_rejects():
    fails(
        f"{WHERE}: the scripted value does not fit the turn's schema, as `awf answer` would say: "
        "$.word: 3 is not of type 'string'",
        args={"schema": SCHEMA},
        agents={"helper": answer(SCHEMA, {"word": 3})},
    )


def test_a_script_that_raises_fails_the_test_with_its_error_as_the_cause():
    def broken(turn):
        raise KeyError("word")

    failure = fails(
        f"{WHERE}: the script raised KeyError: 'word'",
        args={"schema": SCHEMA},
        agents={"helper": answer(SCHEMA, broken)},
    )
    assert isinstance(failure.__cause__, KeyError)


def test_two_globs_that_match_one_agent():
    fails(f"{WHERE}: the globs 'help*', '*er' all match it", agents={"help*": answer("a"), "*er": answer("b")})


def test_a_hanging_agent_stalls_the_run_and_the_failure_says_what_was_in_flight(tmp_path):
    failure = fails(
        "the run stalled: nothing started or ended for 0.3s (stall=0.3); in flight: agent helper, "
        'turn 1 ("Say hello.")',
        agents={"helper": reply.hang()},
        stall=0.3,
        run_root=tmp_path,
    )
    assert failure.__cause__ is None
    [turn] = [line for line in log_of(tmp_path) if line["kind"] == "turn"]
    assert turn["outcome"] == "cancelled"


def test_code_that_stalls_between_stages():
    with pytest.raises(Failure, match=re.escape("in flight: no stage and no turn: the workflow's own code")):
        run_workflow(sleeps, args={"seconds": 60}, stall=0.3)


def test_an_earlier_value_its_stage_cannot_reuse():
    with pytest.raises(
        Failure,
        match=re.escape(
            "earlier: stage plan's value cannot be reused: the recorded value of stage plan no longer fits its "
            "result: $: 'branch' is a required property"
        ),
    ):
        run_workflow(fix_issue, args={"issue": ISSUE}, earlier={"stages": {"plan": {"steps": []}}})


def test_an_earlier_stage_the_attempt_never_entered():
    with pytest.raises(
        Failure,
        match=re.escape(
            "earlier names stage plna, which the attempt never entered (it entered: plan, implement, review)"
        ),
    ):
        run_workflow(
            fix_issue,
            args={"issue": ISSUE},
            earlier={"stages": {"plan": PLAN_VALUE, "implement": BUILT_VALUE, "plna": {}}},
            agents={"reviewer": answer(VERDICT, APPROVED)},
        )


def test_a_script_that_is_not_a_reply_is_refused_at_once():
    with pytest.raises(TypeError, match=re.escape("agents['helper'] is 'hello'; a script is answer(...)")):
        run_workflow(ask, agents={"helper": "hello"})
    with pytest.raises(TypeError, match="entry 2 is"):
        run_workflow(ask, agents={"helper": [answer("a"), {"word": "b"}]})


def test_a_run_awf_run_would_refuse():
    with pytest.raises(
        Failure,
        match=re.escape("awf run would refuse this run: --from-stage reveiw: no such stage; did you mean review?"),
    ):
        run_workflow(fix_issue, args={"issue": ISSUE}, from_stage="reveiw")
    with pytest.raises(Failure, match=re.escape("stage plan: $: 'branch' is a required property")):
        run_workflow(
            fix_issue,
            args={"issue": ISSUE},
            from_stage="review",
            values={"plan": {"steps": []}, "implement": BUILT_VALUE},
        )
