"""The workflow run once on an asyncio loop, with the signals and the deadline watched: how its
run came out, for the ending to be decided from."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..record.entries import Args
from .context import AttemptState, Context, in_stage_work
from .errors import stage_of
from .signals import NAMES, Guard, Interruptions
from .workflow import Workflow


@dataclass
class Result:
    """How the workflow's run came out: its value or its error, and what cut it short."""

    value: Any = None
    error: BaseException | None = None
    signal: int | None = None
    timed_out: bool = False
    interruptions: Interruptions | None = None  # restored once the ending is written


def drive(
    workflow: Workflow[Any],
    context: Context,
    state: AttemptState,
    args: Args,
    deadline: float | None,
    timeout_said: str | None = None,
) -> Result:
    """Run `workflow.run(wf, **args)` to its end, cancelled by a signal or at the deadline."""
    result = Result()
    asyncio.run(_Watch(state, result, deadline, timeout_said).run(lambda: workflow.run(context, **args)))
    return result


class _Watch:
    """The workflow's task and what may cut it short: the signals, the deadline, the guard."""

    def __init__(self, state: AttemptState, result: Result, deadline: float | None, timeout_said: str | None) -> None:
        self.state = state
        self.result = result
        self.deadline = deadline
        self.timeout_said = timeout_said

    async def run(self, work: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        result, deadline = self.result, self.deadline
        self.loop = asyncio.get_running_loop()
        self.task = self.loop.create_task(work())
        self.guard = Guard(deadline, self._on_deadline, in_stage_work)
        interruptions = result.interruptions = Interruptions(self._on_signal)
        interruptions.install()
        self.guard.start()
        try:
            result.value = await self.task
        except BaseException as error:  # every way the workflow can end is an ending
            result.error = error
            # A turn whose deadline is the attempt's may see it pass first and hand the workflow
            # an answerless turn it stops or fails on: that attempt ended because time ran out.
            if deadline is not None and not result.signal and time.time() >= deadline:
                self._on_deadline_after(stage_of(error))
        finally:
            self.guard.stop()
            interruptions.ending = True

    def _cancel(self, reason: str) -> None:
        self.guard.taken()
        if not self.task.done():
            self.task.cancel(reason)

    def _ask(self, reason: str) -> None:
        # Said at once, from a signal handler or the guard's thread, so no stage is entered
        # after it even while the loop is blocked; the loop cancels the task when it can.
        state = self.state
        if state.cancel_reason is None:
            state.cancel_reason = reason
        self.guard.asked(state.cancel_reason)
        self.loop.call_soon_threadsafe(self._cancel, state.cancel_reason)

    def _on_signal(self, number: int) -> None:
        self.result.signal = number
        self._ask(f"cancelled by {NAMES.get(signal.Signals(number), number)}")

    def _deadline_reason(self) -> str:
        # As the user gave it, and the time of day it came: sleep counts against a deadline.
        at = datetime.fromtimestamp(self.deadline or 0).strftime("%H:%M:%S")
        return f"timed out: --timeout {self.timeout_said} passed (at {at})"

    def _on_deadline(self) -> None:
        if self.task.done() or self.result.signal:
            return
        self.result.timed_out = self.state.timed_out = True
        self._ask(self._deadline_reason())

    def _on_deadline_after(self, stage: str | None) -> None:
        if self.result.timed_out:
            return
        state = self.state
        self.result.timed_out = state.timed_out = True
        state.cancelled_in = state.cancelled_in or stage
        state.cancel_reason = state.cancel_reason or self._deadline_reason()
