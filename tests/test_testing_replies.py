"""awf.testing's scripted replies: each goes through the real turn (channel, checks, recovery
prompt, outcome, the record in run.jsonl) and comes back as a real agent's would."""

from __future__ import annotations

import json

from testing_workflows import ask, reviews

from awf.testing import answer, reply, run_workflow

SCHEMA = {"type": "object", "required": ["word"], "properties": {"word": {"type": "string"}}}


def turn_lines(run):
    lines = [json.loads(line) for line in (run.record_dir / "run.jsonl").read_text().splitlines()]
    return [line for line in lines if line["kind"] == "turn"]


def test_an_answer_with_a_schema_is_taken_through_the_channel_and_recorded():
    run = run_workflow(ask, args={"schema": SCHEMA}, agents={"helper": answer(SCHEMA, {"word": "hello"})})
    assert run.value == {"outcome": "answered", "value": {"word": "hello"}, "reason": None}
    [turn] = run.turns_of("helper")
    assert (turn.n, turn.outcome, turn.value, turn.schema, turn.nudge) == (
        1,
        "answered",
        {"word": "hello"},
        SCHEMA,
        False,
    )
    assert turn.prompt == "Say hello.\nIn one word."
    [line] = turn_lines(run)
    assert line["by"] == "awf answer" and line["harness"] == "exec"  # the runtime the workflow gave
    [agent] = run.agents
    assert (agent.key, agent.harness, agent.instructions) == ("helper", "exec", "Be brief.")


def test_an_answer_may_be_a_function_of_the_turn():
    seen = []

    def word(turn):
        seen.append(turn)
        return {"word": turn.prompt.split()[1].rstrip(".")}

    run = run_workflow(ask, args={"schema": SCHEMA, "label": "greet"}, agents={"helper": answer(SCHEMA, word)})
    assert run.value["value"] == {"word": "hello"}
    [turn] = seen
    assert (turn.agent, turn.n, turn.schema, turn.label, turn.stage, turn.nudge, turn.attempt) == (
        "helper",
        1,
        SCHEMA,
        "greet",
        None,
        False,
        1,
    )
    assert run.turns[0].label == "greet"


def test_a_text_answer_for_a_turn_with_no_schema():
    run = run_workflow(ask, agents={"helper": answer("hello")})
    assert run.value == {"outcome": "answered", "value": "hello", "reason": None}
    assert run.turns[0].schema is None


def test_a_silent_agent_gets_its_recovery_prompt_and_the_turn_ends_unanswered():
    run = run_workflow(ask, args={"schema": SCHEMA}, agents={"helper": reply.silent()})
    assert run.value["outcome"] == "unanswered"
    assert "recovery prompt brought no answer" in run.value["reason"]
    assert run.turns[0].nudge is True


def test_a_script_answers_the_recovery_prompt():
    deliveries = []

    def on_nudge(turn):
        deliveries.append(turn.nudge)
        return {"word": "late"} if turn.nudge else reply.silent()

    run = run_workflow(ask, args={"schema": SCHEMA}, agents={"helper": answer(SCHEMA, on_nudge)})
    assert run.value["value"] == {"word": "late"}
    assert deliveries == [False, True]
    assert run.turns[0].nudge is True and run.turns[0].outcome == "answered"


def test_blocked_failed_and_timed_out_replies():
    for script, outcome, reason in [
        (reply.blocked("needs a login"), "blocked", "needs a login"),
        (reply.failed("exited with code 2"), "failed", "exited with code 2"),
        (reply.timed_out("no answer in time"), "timed-out", "no answer in time"),
    ]:
        run = run_workflow(ask, agents={"helper": script})
        assert run.value == {"outcome": outcome, "value": None, "reason": reason}
        assert turn_lines(run)[0]["outcome"] == outcome


def test_a_hanging_agent_is_ended_by_its_turns_timeout():
    run = run_workflow(ask, args={"timeout": 0.2}, agents={"helper": reply.hang()})
    assert run.value["outcome"] == "timed-out"
    assert "no answer by the turn's timeout" in run.value["reason"]


def test_a_list_is_one_entry_a_turn_and_a_glob_serves_every_agent_it_matches():
    scripts = {
        "review:*": [answer(VERDICT_SCHEMA, APPROVED), reply.blocked("out of time")],
        "review:lead": reply.failed("crashed"),  # an exact key wins over the glob
    }
    run = run_workflow(reviews, args={"keys": ["review:a", "review:b", "review:lead"]}, agents=scripts)
    assert run.value == {
        "review:a": ["answered", "blocked"],
        "review:b": ["answered", "blocked"],
        "review:lead": ["failed", "failed"],
    }
    assert [agent.key for agent in run.agents] == ["review:a", "review:b", "review:lead"]
    assert [(turn.agent, turn.n) for turn in run.turns_of("review:a")] == [("review:a", 1), ("review:a", 2)]


VERDICT_SCHEMA = {
    "type": "object",
    "required": ["approved", "findings"],
    "properties": {"approved": {"type": "boolean"}, "findings": {"type": "array", "items": {"type": "string"}}},
}
APPROVED = {"approved": True, "findings": []}
