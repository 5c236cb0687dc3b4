"""Agent turns as spans: the real claude CLI against the fake model, its tokens and cost on the turn's
span as the GenAI conventions name them, and usage read back from an interrupted attempt's session
as an event of the next attempt's span, marked recovered."""

from __future__ import annotations

import pytest
from cli_projects import answer
from conftest import Project
from fakemodel import FakeModel, Text, Usage
from otlp_receiver import Receiver
from test_cost import CLAUDE, VALUE, Costed, cut_short

pytestmark = pytest.mark.harnesses
pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed: pip install -e '.[test,otel]'")


def test_a_turn_span_carries_the_models_tokens_and_cost(project: Project, model: FakeModel) -> None:
    costed = Costed(project, CLAUDE, model)
    model.script(answer(VALUE, usage=Usage(input=900, output=40)), Text("Done."))
    with Receiver() as receiver:
        ended = costed.run("u1", **receiver.env(ONE_STAGE="1"))
        assert ended.code == 0, ended.stderr
    [turn] = [entry for entry in costed.log("u1") if entry["kind"] == "turn"]
    [span] = receiver.named("invoke_agent worker")
    assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert span.attributes["gen_ai.system"] == span.attributes["gen_ai.provider.name"] == "anthropic"
    assert span.attributes["gen_ai.request.model"] == turn["model"] == "claude-sonnet-4-5"
    assert span.attributes["gen_ai.usage.input_tokens"] == turn["usage"]["input"] > 0
    assert span.attributes["gen_ai.usage.output_tokens"] == turn["usage"]["output"] > 0
    assert span.attributes["awf.turn.cost_usd"] == pytest.approx(turn["cost"]) and turn["cost"] > 0
    assert span.attributes["awf.turn.outcome"] == "answered" and span.status == 0
    tokens = {attrs["gen_ai.token.type"]: value for name, attrs, value in receiver.points if name == "awf.tokens"}
    assert tokens == {"input": turn["usage"]["input"], "output": turn["usage"]["output"]}
    [(labels, cost)] = [(attrs, value) for name, attrs, value in receiver.points if name == "awf.cost"]
    assert cost == pytest.approx(turn["cost"])
    assert labels == {"awf.workflow": "work", "awf.runtime": "claude", "gen_ai.request.model": "claude-sonnet-4-5"}


def test_usage_recovered_from_an_interrupted_turn_is_an_event_of_the_next_attempt(
    project: Project, model: FakeModel
) -> None:
    costed = Costed(project, CLAUDE, model)
    with Receiver() as receiver:
        project.env.update(receiver.env(ONE_STAGE="1"))
        ended = cut_short(costed, "r1", "interrupt")
        assert ended.code == 130, ended.stderr
        model.script(answer(VALUE), Text("Done."))
        went_on = costed.run("r1", "--continue")
        assert went_on.code == 0, went_on.stderr
    first, second = receiver.named("awf.attempt")
    [cut] = receiver.named("invoke_agent worker")[:1]
    assert cut.parent != "" and cut.attributes["awf.turn.outcome"] == "cancelled" and cut.status == 2
    assert first.attributes["awf.attempt.ending"] == "cancelled"
    [usage] = [entry for entry in costed.log("r1") if entry["kind"] == "usage"]
    [event] = [attrs for name, attrs in second.events if name == "awf.usage"]
    assert event["awf.usage.recovered"] is True and event["awf.usage.attempt"] == 1
    assert event["gen_ai.usage.input_tokens"] == usage["tokens"]["input"]
    assert event["awf.usage.cost_usd"] == pytest.approx(usage["cost"])
