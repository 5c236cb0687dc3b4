"""Signals and deadlines: how an attempt is cancelled or timed out, and how it crashes.

The first SIGINT, SIGTERM or SIGHUP cancels the workflow, which records the open stage failed
and ends `cancelled`. A second one before the attempt has ended exits at once with no ending,
as a crash does: the run then reads interrupted.

A cancel reaches the workflow through its event loop. A stage whose work blocks that loop (a
time.sleep, a blocking read, a loop of Python that never awaits) would not see it until the work
returned, so a Guard thread watches: when the loop has not taken a cancel within half a second, it
sends the main thread NUDGE, whose handler raises CancelledError into the stage's work, and only
there. The Guard also keeps the deadline, on the time of day, as the loop cannot while blocked.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
NAMES = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP (the terminal closed)"}


class Interruptions:
    """Signal handlers for the life of an attempt."""

    def __init__(self, on_first: Callable[[int], None]) -> None:
        self.received: int | None = None
        # Once the workflow is over and the ending is being written, a first signal waits for it.
        self.ending = False
        self._on_first = on_first
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            # Only the main thread may set handlers. An attempt run on another thread (awf.testing's
            # async twin) is cancelled by whoever runs it there, not by signals.
            return
        for number in HANDLED:
            self._previous[number] = signal.signal(number, self._handle)

    def restore(self) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _handle(self, number: int, _frame: Any) -> None:
        if self.received is not None:
            # A second signal before the attempt has ended: leave now, with no ending.
            os._exit(128 + number)
        self.received = number
        if not self.ending:
            self._on_first(number)


# Sent by the Guard to the main thread to cut short a stage's work that blocks the loop; a
# real-time signal, which nothing else in awf or its agents uses.
NUDGE = signal.SIGRTMIN + 2
# How long the loop has to take a cancel before the work blocking it is cut short.
GRACE = 0.5


class Guard:
    """A thread that keeps the deadline and cuts short a stage's work that blocks the loop.

    `asked(reason)` is called (from a signal handler, or by the Guard at the deadline) when the
    attempt is to be cancelled; `taken()` by the loop once it has cancelled the workflow's task.
    `in_work(frame)` says whether a frame is a stage's work, the one place a cancel may be raised.
    """

    def __init__(
        self,
        deadline: float | None,
        on_deadline: Callable[[], None],
        in_work: Callable[[FrameType | None], bool],
    ) -> None:
        self.deadline = deadline
        self._on_deadline = on_deadline
        self._in_work = in_work
        self._reason: str | None = None
        self._asked_at: float | None = None
        self._taken = threading.Event()
        self._done = threading.Event()
        self._main = threading.main_thread().ident
        self._previous: Any = None
        self._thread = threading.Thread(target=self._watch, name="awf-guard", daemon=True)

    def start(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(NUDGE, self._nudged)
        else:
            self._main = None  # a caller's thread: only the main thread can be sent a signal
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        if self._previous is not None:
            signal.signal(NUDGE, self._previous)

    def asked(self, reason: str) -> None:
        if self._asked_at is None:
            self._reason = reason
            self._asked_at = time.monotonic()

    def taken(self) -> None:
        self._taken.set()

    def _watch(self) -> None:
        while not self._done.wait(0.1):
            if self.deadline is not None and time.time() >= self.deadline:
                self.deadline = None
                self._on_deadline()
            asked = self._asked_at
            if asked is None or self._taken.is_set() or self._main is None:
                continue
            if time.monotonic() - asked >= GRACE:
                signal.pthread_kill(self._main, NUDGE)
                self._asked_at = time.monotonic()  # again after another grace, until it is taken

    def _nudged(self, _number: int, frame: FrameType | None) -> None:
        if not self._taken.is_set() and self._in_work(frame):
            self._taken.set()
            raise asyncio.CancelledError(self._reason)
