"""The attempt as OpenTelemetry spans and metrics, made from the Observer calls the view gets.

`Traced` stands between the engine and the view: it passes every call on to the view, and makes of
it a span: `awf.attempt` for the attempt, `awf.stage` for each stage run or reused, and
`invoke_agent {agent}` for each agent turn (GenAI semantic conventions). What the calls do not
carry (a turn's model, tokens and cost; usage recovered from an interrupted attempt's sessions) is
read from the lines the attempt appends to run.jsonl, so the spans say what the record says.
Imported only when the OTEL_* variables ask for telemetry (view/telemetry.py).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import Counter, Histogram
from opentelemetry.trace import Link, Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from ..record import entries, trace_ids
from ..record.clock import parse_iso
from ..record.errors import RecordError
from ..record.log import parse_lines, raw_lines
from .otel_export import Export, span_context, traceparent

# The GenAI conventions' provider of each harness's model; a harness not named is its own.
PROVIDERS = {"claude": "anthropic", "codex": "openai", "gemini": "gcp.gemini"}
# Endings that are not the attempt's error: completed, and parked to wait for an event.
_FINE = ("completed", "parked")
_READ = frozenset({"run", "attempt-start", "attempt-end", "turn", "usage", "take", "race"})


class Traced:
    """An Observer that hands each call to `view` and records it as spans and metrics."""

    def __init__(self, view: Any, *, traces: bool, metrics: bool) -> None:
        self.view = view
        self.export: Export = Export(traces=traces, metrics_too=metrics)
        self.tracer: trace.Tracer = self.export.tracer
        meter = self.export.meter
        self.attempts: Counter = meter.create_counter(
            "awf.attempts", unit="{attempt}", description="Attempts, by ending"
        )
        self.turns: Counter = meter.create_counter("awf.turns", unit="{turn}", description="Agent turns, by outcome")
        self.tokens: Counter = meter.create_counter("awf.tokens", unit="{token}", description="Tokens agents used")
        self.cost: Counter = meter.create_counter("awf.cost", unit="USD", description="What agents' turns cost")
        self.stage_seconds: Histogram = meter.create_histogram(
            "awf.stage.duration", unit="s", description="Stage durations"
        )
        self.attempt: Span | None = None
        self.stages: dict[str, Span] = {}
        self.turn_spans: dict[tuple[str | None, str], Span] = {}
        self.labels: dict[str, str] = {}  # workflow, run id: on every metric
        self.start_point: str | None = None
        self.log: Path | None = None
        self.offset: int = 0
        self.ended: bool = False
        self.problems: list[str] = []  # said once, after the attempt's ending
        self.parked: dict[str, str] = {}  # each wait an earlier attempt parked on, and when it parked

    # --- the Observer: each call to the view first, then its span --------------------------------

    def attempt_started(self, workflow: str, run_id: str, attempt: int, record_dir: Path) -> None:
        self.view.attempt_started(workflow, run_id, attempt, record_dir)
        self.log = record_dir / "run.jsonl"
        self.labels = {"awf.workflow": workflow}
        lines = self._new_lines()
        runs = [line for line in lines if line["kind"] == "run"]
        made = runs[0]["at"] if runs else ""
        trace_id = (runs[0].get("trace_id") if runs else None) or trace_ids.derived_trace_id(workflow, run_id, made)
        recorded = trace_ids.parse_traceparent(runs[0].get("trace_parent") if runs else None)
        given = trace_ids.parse_traceparent(os.environ.get("TRACEPARENT"))
        parent = otel_context.Context()  # a root span, given the run's trace id by the id generator
        links: list[Link] = []
        if attempt == 1 and recorded is not None:
            parent = trace.set_span_in_context(
                trace.NonRecordingSpan(span_context(recorded.trace_id, recorded.span_id))
            )
        if given is not None and (attempt > 1 or recorded is None):
            links.append(Link(span_context(given.trace_id, given.span_id, given.sampled), {"awf.link": "TRACEPARENT"}))
        self.export.ids.trace_id = int(trace_id, 16)
        self.attempt = self.tracer.start_span(
            "awf.attempt",
            context=parent,
            links=links,
            attributes={
                "awf.workflow": workflow,
                "awf.run.id": run_id,
                "awf.attempt": attempt,
                "host.name": socket.gethostname(),
                "process.pid": os.getpid(),
            },
        )
        for line in lines:
            if line["kind"] == "attempt-start" and line["attempt"] == attempt:
                self.start_point = line.get("flags", {}).get("from_stage") or None
            if line["kind"] == "attempt-end" and line["outcome"] == "parked":
                for wait in line.get("waits", []):
                    self.parked.setdefault(str(wait.get("wait")), line["at"])
        self._usage([line for line in lines if line["kind"] == "usage" and line.get("by_attempt") == attempt])

    def notice(self, text: str) -> None:
        self.view.notice(text)
        if self.attempt is not None:
            self.attempt.add_event("awf.notice", {"message": text})

    def stage_reused(self, name: str, value: Any, record: Mapping[str, Any] | None, how: str) -> None:
        self.view.stage_reused(name, value, record, how)
        attributes: dict[str, AttributeValue] = {"awf.stage.name": name, "awf.stage.reused": True, "awf.stage.how": how}
        if record is not None and isinstance(record.get("attempt"), int):
            attributes["awf.stage.recorded_by"] = record["attempt"]
        now = time.time_ns()
        self.tracer.start_span("awf.stage", context=self._under(None), attributes=attributes, start_time=now).end(now)

    def stage_started(self, name: str, why: str | None) -> None:
        self.view.stage_started(name, why)
        if self.start_point is None:
            self.start_point = name
        attributes: dict[str, AttributeValue] = {"awf.stage.name": name, "awf.stage.reused": False}
        if why:
            attributes["awf.stage.why"] = why
        self.stages[name] = self.tracer.start_span("awf.stage", context=self._under(None), attributes=attributes)

    def stage_ended(self, record: Mapping[str, Any], seconds: float) -> None:
        self.view.stage_ended(record, seconds)
        self._waits(self._new_lines())
        name, outcome = str(record.get("stage")), str(record.get("outcome"))
        self.stage_seconds.record(seconds, {**self.labels, "awf.stage.name": name, "awf.stage.outcome": outcome})
        span = self.stages.pop(name, None)
        if span is None:
            return
        span.set_attribute("awf.stage.outcome", outcome)
        span.set_attribute("awf.stage.origin", str(record.get("origin")))
        if outcome != "succeeded":
            span.set_status(Status(StatusCode.ERROR, f"{outcome}: {record.get('reason') or ''}".rstrip(": ")))
        span.end()

    def logged(self, stage: str | None, message: str) -> None:
        self.view.logged(stage, message)
        span = self.stages.get(stage) if stage is not None else self.attempt
        if span is not None:
            span.add_event("awf.log", {"message": message})

    def group_started(self, label: str, branches: int, concurrency: int | None) -> None:
        self.view.group_started(label, branches, concurrency)

    def group_ended(self, label: str, tally: str) -> None:
        self.view.group_ended(label, tally)

    def branch_started(self, label: str, branch: str) -> None:
        self.view.branch_started(label, branch)

    def branch_ended(self, label: str, branch: str, outcome: str, reason: str | None, seconds: float) -> None:
        self.view.branch_ended(label, branch, outcome, reason, seconds)

    def agent_turn_started(self, stage: str | None, agent: str, harness: str, turn: int, label: str) -> dict[str, str]:
        """The turn's span; its TRACEPARENT, for the agent's processes, so a CLI that exports its
        own spans nests them under the turn."""
        self.view.agent_turn_started(stage, agent, harness, turn, label)
        provider = PROVIDERS.get(harness, harness)
        span = self.tracer.start_span(
            f"invoke_agent {agent}",
            context=self._under(stage),
            kind=trace.SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "gen_ai.system": provider,
                "gen_ai.provider.name": provider,
                "awf.agent.harness": harness,
                "awf.turn.number": turn,
                "awf.turn.label": label,
            },
        )
        self.turn_spans[(stage, agent)] = span
        return {"TRACEPARENT": traceparent(span)}

    def status(self, text: str, progress: float | None) -> None:
        self.view.status(text, progress)
        if self.attempt is not None:  # wf.status: an event of the attempt, and its latest as attributes
            said: dict[str, str | float] = {"text": text, **({"progress": progress} if progress is not None else {})}
            self.attempt.add_event("awf.status", said)
            self.attempt.set_attribute("awf.status", text)

    def agent_turn_waiting(self, stage: str | None, agent: str, why: str) -> None:
        self.view.agent_turn_waiting(stage, agent, why)
        # Before its turn starts (--max-agents): an event of the stage, or of the attempt.
        span = self.stages.get(stage) if stage is not None else None
        span = span or self.attempt
        if span is not None:
            span.add_event("awf.turn.waiting", {"gen_ai.agent.name": agent, "why": why})

    def agent_turn_nudged(self, stage: str | None, agent: str, why: str) -> None:
        self.view.agent_turn_nudged(stage, agent, why)
        span = self.turn_spans.get((stage, agent))
        if span is not None:
            span.add_event("awf.turn.nudged", {"why": why})

    def agent_turn_ended(self, stage: str | None, agent: str, outcome: str, reason: str | None, seconds: float) -> None:
        self.view.agent_turn_ended(stage, agent, outcome, reason, seconds)
        span = self.turn_spans.pop((stage, agent), None)
        lines = self._new_lines()
        self._usage([line for line in lines if line["kind"] == "usage"])
        self._waits(lines)
        turns = [line for line in lines if line["kind"] == "turn" and line["agent"] == agent]
        line = turns[-1] if turns else entries.turn(attempt=0, agent=agent, turn=0, outcome=outcome)
        harness = str(line.get("harness") or "")
        model = line.get("model") or (line.get("usage") or {}).get("model")
        labels = {**self.labels, "awf.runtime": harness, "gen_ai.request.model": str(model or "")}
        self.turns.add(1, {**labels, "awf.turn.outcome": outcome})
        if span is None:
            return
        span.set_attribute("awf.turn.outcome", outcome)
        if model:
            span.set_attribute("gen_ai.request.model", str(model))
        tokens = line.get("usage") or {}
        for kind, attribute in (("input", "gen_ai.usage.input_tokens"), ("output", "gen_ai.usage.output_tokens")):
            if isinstance(tokens.get(kind), int):
                span.set_attribute(attribute, tokens[kind])
                self.tokens.add(tokens[kind], {**labels, "gen_ai.token.type": kind})
        cost = line.get("cost")
        if cost is not None:
            span.set_attribute("awf.turn.cost_usd", float(cost))
            self.cost.add(float(cost), labels)
        if outcome != "answered":
            span.set_status(Status(StatusCode.ERROR, f"{outcome}: {reason}" if reason else outcome))
        span.end()

    # --- the ending ------------------------------------------------------------------------------

    def closing(self, ending: Any) -> None:
        """The attempt's ending, as the view shows it: the attempt span's status and end."""
        self.view.closing(ending)
        lines = self._new_lines()
        self._usage([line for line in lines if line["kind"] == "usage"])
        self._waits(lines)
        for wait in getattr(ending, "waits", None) or []:  # parked: the waits the next attempt answers
            if self.attempt is not None:
                self.attempt.add_event("awf.wait.parked", {"awf.wait": str(wait.get("wait"))})
        self._end(str(ending.outcome), int(ending.exit_code), ending.stage, ending.reason)

    def finish(self) -> str | None:
        """Once the attempt has ended, whatever ended it: its spans and metrics sent, within the
        bound. What went wrong, if anything did, in one sentence."""
        if self.attempt is not None and not self.ended:
            self._end("interrupted", None, None, "awf ended before the attempt had an ending")
        problem = self.export.send()
        if problem is not None:
            self.problems.append(f"traces and metrics not sent: {problem}")
        return "; ".join(self.problems) or None

    def _end(self, outcome: str, exit_code: int | None, stage: str | None, reason: str | None) -> None:
        if self.attempt is None or self.ended:
            return
        self.ended = True
        said = f"{outcome}: {reason}" if reason else outcome
        error = Status(StatusCode.ERROR, said)
        for span in [*self.turn_spans.values(), *self.stages.values()]:
            span.set_status(error)  # cut short by the ending: a stop, a Ctrl-C, the deadline
            span.end()
        self.turn_spans.clear()
        self.stages.clear()
        span = self.attempt
        span.set_attribute("awf.attempt.ending", outcome)
        if exit_code is not None:
            span.set_attribute("awf.attempt.exit_code", exit_code)
        if stage:
            span.set_attribute("awf.attempt.stage", stage)
        if reason:
            span.set_attribute("awf.attempt.reason", reason)
        if self.start_point:
            span.set_attribute("awf.attempt.start_point", self.start_point)
        span.set_status(Status(StatusCode.OK) if outcome in _FINE else error)
        span.end()
        self.attempts.add(1, {**self.labels, "awf.attempt.ending": outcome})

    # --- the record ------------------------------------------------------------------------------

    def _under(self, stage: str | None) -> otel_context.Context:
        """The context a span starts in: under its stage's span, else under the attempt's."""
        parent = self.stages.get(stage) if stage is not None else None
        parent = parent or self.attempt
        return trace.set_span_in_context(parent) if parent is not None else otel_context.Context()

    def _new_lines(self) -> list[entries.Entry]:
        """The lines of the kinds spans need that the log gained since the last read, each checked
        against its schema as every reader of the log checks it: a hand-edited line that does not
        fit costs its spans, never the attempt."""
        if self.log is None:
            return []
        log = self.log

        def since_last() -> Iterator[tuple[int, bytes]]:
            for offset, raw in raw_lines(log, self.offset):
                self.offset = offset + len(raw)
                yield offset, raw

        problems: list[RecordError] = []
        found: list[entries.Entry] = []
        try:
            for line in parse_lines(log, since_last(), kinds=_READ, problems=problems):
                if line.entry["kind"] in _READ:
                    found.append(line.entry)
        except (OSError, RecordError) as error:
            problems.append(error if isinstance(error, RecordError) else RecordError(log, str(error)))
        self.problems += [f"{problem}; spans miss what it holds" for problem in problems]
        return found

    def _waits(self, lines: list[entries.Entry]) -> None:
        """A span for each wait answered in this attempt (an event taken, a race won), from when an
        earlier attempt parked on it, or from the moment it was answered when no attempt had to."""
        for line in lines:
            if line["kind"] not in ("take", "race"):
                continue
            parked = self.parked.get(line["wait"])
            ended = _nanoseconds(line["at"])
            began = _nanoseconds(parked) if parked else ended
            attributes: dict[str, AttributeValue] = {"awf.wait": line["wait"], "awf.wait.parked": parked is not None}
            if line["kind"] == "take":
                attributes.update({"awf.event.name": line["name"], "awf.event.id": line["event"]})
            else:
                attributes["awf.wait.winner"] = line["winner"]
                if line.get("event"):
                    attributes["awf.event.id"] = str(line.get("event"))
            stage = line.get("stage")
            span = self.tracer.start_span(
                "awf.wait", context=self._under(stage), attributes=attributes, start_time=min(began, ended)
            )
            span.end(ended)

    def _usage(self, lines: list[entries.Entry]) -> None:
        """Usage read from an earlier attempt's sessions: an event on the attempt span, marked recovered."""
        for line in lines:
            if line["kind"] != "usage" or not line["recovered"] or self.attempt is None:
                continue
            tokens = line["tokens"] or {}
            attributes: dict[str, AttributeValue] = {
                "awf.usage.recovered": True,
                "gen_ai.agent.name": line["agent"],
                "awf.turn.number": line["turn"],
                "awf.usage.attempt": line["attempt"],
            }
            if line.get("stage"):
                attributes["awf.stage.name"] = str(line["stage"])
            labels = {**self.labels, "awf.runtime": str(line.get("harness") or ""), "gen_ai.request.model": ""}
            for kind, attribute in (("input", "gen_ai.usage.input_tokens"), ("output", "gen_ai.usage.output_tokens")):
                if isinstance(tokens.get(kind), int):
                    attributes[attribute] = tokens[kind]
                    self.tokens.add(tokens[kind], {**labels, "gen_ai.token.type": kind})
            if line["cost"] is not None:
                attributes["awf.usage.cost_usd"] = float(line["cost"])
                self.cost.add(float(line["cost"]), labels)
            elif line.get("unknown"):
                attributes["awf.usage.unknown"] = str(line.get("unknown"))
            self.attempt.add_event("awf.usage", attributes)


def _nanoseconds(at: str) -> int:
    """An ISO 8601 time of the record as OpenTelemetry's nanoseconds since the epoch."""
    return int(parse_iso(at) * 1_000_000_000)
