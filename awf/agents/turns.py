"""A turn: one prompt to an agent, carried to one outcome, and written to the run's history.

The same for every harness: the turn opens its answer channel, has the harness deliver the
prompt, and watches the channel, the deadline and cancellation until the turn settles. An
agent that stops without answering gets one recovery prompt; a turn past its deadline is
timed-out and its agent ended. Whatever happens, the turn settles once (outcome.json) and its
line goes into run.jsonl.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import time
from dataclasses import dataclass
from typing import Any, Protocol, cast

from ..record import entries
from ..record.clock import format_duration, iso
from ..record.untrusted import Refused
from . import turn_outcome as kinds
from .answers import last_document, read_answer
from .channel import AgentChannel, Settled, read_outcome, settle
from .harness import Harness, Message, Session, Stopped
from .host import Host, TurnSchema
from .prompts import answer_instructions, recovery_prompt
from .spec import AgentError, AgentSpec
from .turn_outcome import Answered, NotAnswered, Outcome, Turn
from .turn_sessions import SessionMarks

POLL = 0.05
_TIMED_OUT = object()


class TurnAgent(Protocol):
    """What a turn needs of its agent (an awf.agents.agent.Agent, which counts its own turns)."""

    key: str
    spec: AgentSpec
    harness: Harness | None
    unavailable: str | None  # why no harness can run it: the turn fails with this
    session: Session
    channel: AgentChannel
    ends: int  # how many times the agent was ended: a turn that sees this change was cancelled

    def end(self) -> None: ...


@dataclass(frozen=True)
class Ask:
    """A turn's request, checked: its prompt, its label, its own timeout and its schema, loaded."""

    prompt: str
    label: str | None
    seconds: float | None
    typed: TurnSchema | None


def check_ask(key: str, host: Host, *, prompt: Any, schema: Any, timeout: Any, label: Any) -> Ask:
    """The turn `agent.run(...)` asks for, or AgentError naming what is wrong with it."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise AgentError(f"agent {key}: a prompt is a non-empty string, not {prompt!r}")
    if label is not None and not isinstance(label, str):
        raise AgentError(f"agent {key}: a label is a string, not {label!r}")
    seconds = _timeout_seconds(key, timeout)
    typed = None if schema is None else host.load_schema(schema, f"agent {key}'s turn")
    return Ask(prompt, label, seconds, typed)


async def run_turn(agent: TurnAgent, host: Host, ask: Ask, number: int) -> Turn[Any]:
    """Turn `number` of `agent`, carried to its outcome and written to run.jsonl."""
    stage = host.stage()
    talk = _Conversation(agent, host, ask, number, stage)
    added = host.progress.agent_turn_started(stage, agent.key, agent.spec.harness, number, talk.shown)
    if added:
        talk.env.update(added)
    fields: dict[str, Any] = {"attempt": host.attempt, "agent": agent.key, "turn": number}
    if stage is not None:
        fields["stage"] = stage
    talk.marks = SessionMarks(agent.harness, agent.session, talk.env, host.log, fields)
    talk.marks.start(agent.spec.harness)
    try:
        settled = await talk.run()
    except asyncio.CancelledError:
        agent.end()
        if host.timed_out():  # the attempt's deadline cut the turn: that is a timeout, not a cancel
            settled = talk.settle(kinds.TIMED_OUT, reason=talk.timeout_reason(attempts=True))
        else:
            settled = talk.settle(kinds.CANCELLED, reason=host.cancel_reason() or "the turn was cancelled")
        talk.finish(settled)
        raise
    # A turn that passes the run's --max-cost is paid for: its outcome goes to the workflow, and
    # the budget stops the attempt before the next turn starts.
    return talk.finish(settled)


def _timeout_seconds(key: str, timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise AgentError(f"agent {key}: timeout is a number of seconds above zero, or a timedelta, not {timeout!r}")
    return float(timeout)


def _deadline(started: float, seconds: float | None, attempt_deadline: float | None) -> float | None:
    own = started + seconds if seconds is not None else None
    if own is None or attempt_deadline is None:
        return own if own is not None else attempt_deadline
    return min(own, attempt_deadline)


def _quoted(line: str, width: int = 80) -> str:
    return json.dumps(line if len(line) <= width else line[: width - 1] + "…", ensure_ascii=False)


def first_line(prompt: str, width: int = 60) -> str:
    """What the progress shows for a turn with no label."""
    line = prompt.strip().splitlines()[0]
    return line if len(line) <= width else line[: width - 1] + "…"


class _Conversation:
    """Deliveries until the turn settles: the prompt, and at most one recovery prompt."""

    def __init__(self, agent: TurnAgent, host: Host, ask: Ask, number: int, stage: str | None) -> None:
        self.agent = agent
        self.host = host
        self.number = number
        self.stage = stage
        self.prompt = ask.prompt
        self.label = ask.label
        self.typed = ask.typed
        self.schema = None if ask.typed is None else ask.typed.schema
        self.own_timeout = ask.seconds is not None
        self.started = time.time()  # the deadline counts from it
        self.deadline = _deadline(self.started, ask.seconds, host.deadline)
        self.shown = ask.label or first_line(ask.prompt)  # what the progress shows of the turn
        self.folder = agent.channel.open_turn(number, self.schema, self.deadline, self.shown)
        self.nudged = False
        self.usage: dict[str, Any] | None = None
        self.cost: float | None = None
        self.env = {**os.environ, **agent.channel.env(number)}
        self.marks: SessionMarks | None = None
        self.deliveries = 0
        self.reported = 0  # deliveries whose tokens the harness gave

    @property
    def unreported(self) -> bool:
        """Some of what the turn used went unreported (a delivery cut short, or its program said
        nothing of it), and its agent's session file is known, where the next attempt reads it."""
        return self.reported < self.deliveries and self.marks is not None and self.marks.known

    async def run(self) -> Settled:
        agent = self.agent
        if agent.harness is None:
            return self.settle(kinds.FAILED, reason=agent.unavailable)
        harness = agent.harness
        missing = self._missing(harness)
        if missing:
            return self.settle(kinds.FAILED, reason=f"{harness.name}: {missing}")
        instructions = answer_instructions(self.schema, harness.answer_hint)
        first = self.prompt.rstrip() + "\n" + instructions
        ends = agent.ends
        why = ""
        # A tool (a linter, a test suite, a deploy script) would only run its whole command again.
        deliveries = (1, 2) if agent.spec.runtime.get("recovery", True) else (1,)
        for delivery in deliveries:
            text = first if delivery == 1 else recovery_prompt(why, instructions)
            if delivery == 2:
                self.nudged = True
                self.host.progress.agent_turn_nudged(self.host.stage(), agent.key, why)
            message = Message(text, self.number, delivery, first, self.folder, self.env, self.deadline)
            settled, why = self._after(await self._deliver(message, harness), ends)
            if settled is not None:
                return settled
        if len(deliveries) == 1:
            no_recovery = '(its runtime has "recovery": false: no recovery prompt)'
            return self.settle(kinds.UNANSWERED, reason=f"{why} {no_recovery}")
        return self.settle(kinds.UNANSWERED, reason=f"{why}, and the recovery prompt brought no answer either")

    def _missing(self, harness: Harness) -> str | None:
        """What the harness says must be installed before its program can run, if anything."""
        try:
            return harness.missing(self.agent.session, self.env)
        except Exception as error:  # a harness's bug fails the turn; it must not fail the attempt
            return f"the harness failed to check its program: {type(error).__name__}: {error}"

    def _after(self, result: Settled | Stopped | object, ends: int) -> tuple[Settled | None, str]:
        """What the end of a delivery comes to: the turn settled, or else why the agent has given
        no answer yet (for the recovery prompt). `ends`: the agent's count of ends as the turn began."""
        if isinstance(result, dict):
            return cast(Settled, result), ""
        if self.agent.ends != ends:
            return self.settle(kinds.CANCELLED, reason="the agent was closed while it worked"), ""
        if result is _TIMED_OUT:
            self.agent.end()
            return self.settle(kinds.TIMED_OUT, reason=self.timeout_reason()), ""
        stopped = cast(Stopped, result)  # the one other thing a delivery ends with
        self._count(stopped)
        if stopped.failed:
            return self.settle(kinds.FAILED, reason=stopped.failed), ""
        if stopped.blocked:
            return self.settle(kinds.BLOCKED, reason=stopped.blocked), ""
        candidate, why = self._candidate(stopped.text)
        if candidate is None:
            return None, why
        value, problems = read_answer(candidate, self.schema)
        if not problems:
            return self.settle(kinds.ANSWERED, value=value, by="the agent's output"), ""
        return None, "the answer it printed cannot be taken: " + "; ".join(problems)

    async def _deliver(self, message: Message, harness: Harness) -> Settled | Stopped | object:
        """Run one delivery until the turn settles, the agent stops, or the deadline passes."""
        task = asyncio.ensure_future(harness.deliver(self.agent.session, message))
        self.deliveries += 1
        sandbox = self.agent.session.sandbox
        try:
            while True:
                if self.marks is not None:
                    self.marks.check()
                passed = sandbox.watch.breach() if sandbox is not None else None
                if sandbox is not None and passed is not None:
                    sandbox.watch.end()  # the sandbox, and everything in it, goes now
                    await _let_end(task, 0)
                    return read_outcome(self.folder) or Stopped(failed=passed)
                settled = read_outcome(self.folder)
                if settled is not None:
                    await _let_end(task, harness.answer_grace)
                    self._count_finished(task)  # what the answered turn used, where the harness says
                    return settled
                if task.done():
                    settled = read_outcome(self.folder)  # an answer given just as the agent exited
                    if settled is not None:
                        self._count_finished(task)
                        return settled
                    return _stopped(task, harness.name)
                if self.deadline is not None and time.time() >= self.deadline:
                    await _let_end(task, 0)
                    return read_outcome(self.folder) or _TIMED_OUT
                await asyncio.wait({task}, timeout=POLL)
        except asyncio.CancelledError:
            task.cancel()
            raise

    def _candidate(self, text: str | None) -> tuple[str | None, str]:
        """What the agent's output offers as its answer, if anything, and else why it offers none."""
        if text is None or not text.strip():
            return None, "it stopped without answering"
        if self.schema is None:
            return text, ""
        document = last_document(text)
        if document is not None:
            return document, ""
        stripped = text.rstrip()
        last = stripped[stripped.rfind("\n") + 1 :].strip()
        if last[:1] in ("{", "["):
            return last, ""  # meant as the answer, but broken: say what is wrong with it
        return None, f"its output ended with {_quoted(last)}, not a JSON answer, and it did not run awf answer"

    def _count_finished(self, task: asyncio.Future[Any]) -> None:
        if task.done() and not task.cancelled() and task.exception() is None and isinstance(task.result(), Stopped):
            self._count(task.result())

    def _count(self, stopped: Stopped) -> None:
        if stopped.usage:
            self.reported += 1
            self.usage = {**(self.usage or {}), **stopped.usage}
        if stopped.cost is not None:
            self.cost = (self.cost or 0.0) + stopped.cost

    def timeout_reason(self, *, attempts: bool = False) -> str:
        """Why the turn timed out: after how long, and whose deadline it was."""
        after = format_duration(time.time() - self.started)
        own = not attempts and self.own_timeout
        if own and (self.host.deadline is None or (self.deadline or 0) < self.host.deadline):
            return f"timed out after {after}: no answer by the turn's timeout; the agent was ended"
        return f"timed out after {after}: no answer by the attempt's --timeout; the agent was ended"

    def settle(self, kind: str, *, value: Any = None, reason: str | None = None, by: str = "awf") -> Settled:
        """Settle the turn (outcome.json, once), unless the channel settled it first; what it settled to."""
        return settle(self.folder, kind, value=value, reason=reason, by=by)

    def finish(self, settled: Settled) -> Turn[Any]:
        """The turn's line in run.jsonl, its end in the progress, and the Turn the workflow gets."""
        ended = time.time()
        outcome = _outcome(settled, self.typed)
        fields: entries.TurnFields = {
            "attempt": self.host.attempt,
            "agent": self.agent.key,
            "turn": self.number,
            "harness": self.agent.spec.harness,
            "model": self.agent.spec.model or (self.usage or {}).get("model"),
            "session": self.agent.session.id,
            "label": self.label,
            "prompt": self.prompt,
            "outcome": outcome.kind,
            "reason": outcome.reason,
            "by": settled.get("by"),
            "nudged": self.nudged,
            "started": iso(self.started),
            "ended": iso(ended),
            "seconds": round(ended - self.started, 3),
            "usage": self.usage,
            "cost": self.cost,
        }
        if self.marks is not None:
            self.marks.check()
        if self.unreported:
            fields["unreported"] = True  # the next attempt reads what it used from the session file
        if outcome.answered:
            fields["value"] = settled.get("value")  # plain JSON, as the agent gave it
        if self.stage is not None:
            fields["stage"] = self.stage
        entries.append(self.host.log, entries.turn(**fields))
        self.host.progress.agent_turn_ended(
            self.stage, self.agent.key, outcome.kind, outcome.reason, ended - self.started
        )
        return Turn(
            self.agent.key,
            self.number,
            self.prompt,
            outcome,
            self.label,
            fields["started"],
            fields["ended"],
            ended - self.started,
            self.agent.session.id,
            self.usage,
            self.cost,
        )


async def _let_end(task: asyncio.Future[Any], grace: float) -> None:
    """Give a delivery `grace` seconds to end by itself, then cancel it and wait for it to stop."""
    if grace > 0:
        await asyncio.wait({task}, timeout=grace)
    if not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=10)
    if task.done() and not task.cancelled():
        task.exception()  # seen, so asyncio does not complain of it


def _stopped(task: asyncio.Future[Any], name: str) -> Stopped:
    try:
        result = task.result()
    except Refused as error:  # a link or a FIFO the agent put in its own folder, where awf reads and writes
        return Stopped(failed=f"a file of the turn was refused: {error}")
    except Exception as error:  # a harness's bug fails the turn; it must not fail the attempt
        return Stopped(failed=f"the {name} harness failed: {type(error).__name__}: {error}")
    if not isinstance(result, Stopped):
        return Stopped(failed=f"the {name} harness returned {result!r}, not a Stopped")
    return result


def _outcome(settled: Settled, typed: TurnSchema | None) -> Outcome[Any]:
    kind = settled["outcome"]
    if kind != kinds.ANSWERED:
        return NotAnswered(kind, settled.get("reason") or kind)
    value = settled.get("value")
    # Checked again as it is read: an outcome.json edited by hand must not slip a bad answer in. For a
    # Python type this makes the instance, and runs what its JSON Schema cannot say (its validators).
    if typed is not None:
        value, problem = typed.load(value)
    else:
        problem = None if isinstance(value, str) else f"the answer is a {type(value).__name__}, not text"
    if problem:
        return NotAnswered(kinds.FAILED, "the recorded answer does not fit the turn: " + problem)
    return Answered(value)
