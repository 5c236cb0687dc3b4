"""The scripted harness, and the watch a test keeps on its attempt.

Every agent of a test attempt runs on `ScriptedHarness` (routed by awf.agents.registry), so a
scripted turn goes through the real turn: its answer channel, the schema checks `awf answer`
makes, the recovery prompt, the outcome and its line in run.jsonl. Only the agent is scripted.

A problem that is the test's (no script, a schema that is not the turn's, a value its schema
rejects, a script that raises, a run that stalls) settles the turn failed, ends the attempt and
fails the test with a `Failure` naming the agent, the turn and its prompt's first line.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from ..agents import answering
from ..agents.channel import read_turn, settle
from ..agents.harness import Harness, Message, Session, Stopped
from ..agents.prompts import answer_instructions
from ..agents.registry import own_harness
from ..engine.observer import Silent
from ..engine.schema_text import type_text
from ..record.entries import RuntimeOptions
from .scripts import _TEXT, Failure, Reply, ScriptBook, Turn


class Watch(Silent):
    """One attempt of a test as it runs: the engine's observer, what is in flight, when anything
    last started or ended, and the way to end the attempt early (from any thread)."""

    def __init__(self, stall: float) -> None:
        self.stall = stall
        self.last: float = time.monotonic()
        self.attempt: int = 0
        self.stage: str | None = None
        self.turns: dict[tuple[str, int], tuple[str | None, str]] = {}  # in flight: stage, label
        self.notices: list[str] = []
        self.failure: Failure | None = None
        self.error: BaseException | None = None  # the workflow's own error, raised out of its run
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None

    def touch(self) -> None:
        self.last = time.monotonic()

    # The engine's observer.
    def attempt_started(self, workflow: str, run_id: str, attempt: int, record_dir: Any) -> None:
        self.attempt = attempt
        self.touch()

    def notice(self, text: str) -> None:
        self.notices.append(text)
        self.touch()

    def stage_reused(self, name: str, value: Any, record: Any, how: str) -> None:
        self.touch()

    def stage_started(self, name: str, why: str | None) -> None:
        self.stage = name
        self.touch()

    def stage_ended(self, record: Mapping[str, Any], seconds: float) -> None:
        self.stage = None
        self.touch()

    def logged(self, stage: str | None, message: str) -> None:
        self.touch()

    def status(self, text: str, progress: float | None) -> None:
        self.touch()

    def group_started(self, label: str, branches: int, concurrency: int | None) -> None:
        self.touch()

    def group_ended(self, label: str, tally: str) -> None:
        self.touch()

    def branch_started(self, label: str, branch: str) -> None:
        self.touch()

    def branch_ended(self, label: str, branch: str, outcome: str, reason: str | None, seconds: float) -> None:
        self.touch()

    def agent_turn_started(self, stage: str | None, agent: str, harness: str, turn: int, label: str) -> None:
        self.turns[(agent, turn)] = (stage, label)
        self.touch()

    def agent_turn_nudged(self, stage: str | None, agent: str, why: str) -> None:
        self.touch()

    def agent_turn_waiting(self, stage: str | None, agent: str, why: str) -> None:
        self.touch()

    def agent_turn_ended(self, stage: str | None, agent: str, outcome: str, reason: str | None, seconds: float) -> None:
        for key in [key for key in self.turns if key[0] == agent]:  # one turn at a time per agent
            del self.turns[key]
        self.touch()

    # The workflow's task, so the attempt can be ended.
    def running(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None) -> None:
        with self._lock:
            self._loop, self._task = loop, task
        self.touch()
        if self.failure is not None and task is not None:
            loop.call_soon(task.cancel)  # the test failed already, in the look-ahead: end this run too

    def finished(self) -> None:
        with self._lock:
            self._loop = self._task = None

    def fail(self, failure: Failure) -> None:
        """Fail the test with `failure` (the first one counts), and end the attempt."""
        with self._lock:
            if self.failure is None:
                self.failure = failure
            loop, task = self._loop, self._task
        if loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:
                pass  # the loop has closed: the attempt is over already

    def check_stall(self) -> None:
        with self._lock:
            running = self._task is not None
        if running and self.failure is None and time.monotonic() - self.last > self.stall:
            self.fail(Failure(self.stall_text()))

    def stall_text(self) -> str:
        flight = []
        if self.stage:
            flight.append(f"stage {self.stage}")
        for (agent, turn), (_stage, label) in list(self.turns.items()):  # read from the stall watch thread
            flight.append(f'agent {agent}, turn {turn} ("{label}")')
        what = "; ".join(flight) or "no stage and no turn: the workflow's own code, between stages"
        return (
            f"the run stalled: nothing started or ended for {self.stall:g}s (stall={self.stall:g}); in flight: {what}"
        )


def watch_stalls(watch: Watch, stop: threading.Event) -> None:
    """Until `stop` is set, fail the test when its attempt stalls."""
    while not stop.wait(min(0.05, watch.stall / 4)):
        watch.check_stall()


class ScriptedHarness(Harness):
    """Answers each turn as the test's scripts say."""

    name = "scripted"
    answer_grace: ClassVar[float] = 0.0

    def __init__(self, book: ScriptBook, watch: Watch) -> None:
        self.book = book
        self.watch = watch

    def spec_problem(self, runtime: RuntimeOptions) -> str | None:
        try:
            own = own_harness(runtime["harness"])
        except Exception:
            return None  # a harness this awf lacks: a test needs no agent's CLI
        return own.spec_problem(runtime)

    async def deliver(self, session: Session, message: Message) -> Stopped:
        self.watch.touch()
        turn = self._turn(session, message)
        try:
            # Both deliveries of a turn (its prompt, its recovery prompt) take one script entry.
            entry = session.data.get(f"entry-{message.turn}")
            if entry is None:
                entry = session.data[f"entry-{message.turn}"] = self.book.entry(turn)
            return await self._act(entry.resolve(turn), turn, message)
        except Failure as failure:
            self.watch.fail(failure)
            settle(message.dir, "failed", reason=f"awf.testing: {failure}", by="awf.testing")
            await asyncio.Event().wait()  # until the attempt's end cancels it
            raise

    def _turn(self, session: Session, message: Message) -> Turn:
        schema = read_turn(message.dir)["schema"]
        instructions = answer_instructions(schema, self.answer_hint)
        prompt = message.original
        if prompt.endswith(instructions):
            prompt = prompt.removesuffix(instructions).removesuffix("\n")
        stage, label = self.watch.turns.get((session.key, message.turn), (None, None))
        return Turn(session.key, message.turn, prompt, schema, label, stage, message.recovery, self.watch.attempt)

    async def _act(self, chosen: Reply, turn: Turn, message: Message) -> Stopped:
        kind = chosen.kind
        if kind == "answer":
            self._answer(chosen, turn, message)
        elif kind == "blocked":
            answering.answer(message.env, None, blocked=chosen.reason, turn=message.turn)
        elif kind == "failed":
            return Stopped(failed=chosen.reason)
        elif kind == "timed-out":
            settle(message.dir, "timed-out", reason=chosen.reason, by="awf")
        elif kind == "hang":
            await asyncio.Event().wait()  # until the turn's deadline, or the stall watch, cancels it
        return Stopped()  # silent: the turn sends the recovery prompt

    def _answer(self, chosen: Reply, turn: Turn, message: Message) -> None:
        where = turn.where()
        if chosen.schema is _TEXT:
            if turn.schema is not None:
                raise Failure(
                    f"{where}: the turn asks for JSON that fits {type_text(turn.schema)}, and the script "
                    "answers text; answer it with answer(SCHEMA, value)"
                )
            if not isinstance(chosen.value, str):
                raise Failure(f"{where}: the turn asks for text, and the script gives {chosen.value!r}")
        elif turn.schema is None:
            raise Failure(
                f"{where}: the turn asks for text (it has no schema), and the script answers with a "
                'schema; answer it with answer("text")'
            )
        elif chosen.schema != turn.schema:
            raise Failure(
                f"{where}: the script's schema is not the one the turn asks with; the turn asks for "
                f"{type_text(turn.schema)}, the script answers {type_text(chosen.schema)}"
            )
        value, problem = chosen.plain()
        if problem:
            raise Failure(f"{where}: the scripted value does not fit the turn's type: {problem}")
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise Failure(f"{where}: the scripted value is not JSON: {error}") from None
        try:
            answering.answer(message.env, text, turn=message.turn)
        except answering.Rejected as rejected:
            raise Failure(
                f"{where}: the scripted value does not fit the turn's schema, as `awf answer` "
                f"would say: {'; '.join(rejected.problems)}"
            ) from None
        except answering.Refused as refused:
            raise Failure(f"{where}: the answer was refused: {refused}") from None
