"""Signals and deadlines: how an attempt is cancelled or timed out, and how it crashes.

The first SIGINT, SIGTERM or SIGHUP cancels the workflow, which records the open stage failed
and ends `cancelled`. A second one before the attempt has ended exits at once with no ending,
as a crash does: the run then reads interrupted.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable
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


async def watch_deadline(deadline: float, on_passed: Callable[[], None]) -> None:
    """Call `on_passed` once the wall clock passes `deadline`.

    The loop's timers run on a monotonic clock that stands still while the machine sleeps, so
    this looks at the time of day at least once a second instead of sleeping until the deadline.
    """
    while True:
        remaining = deadline - time.time()
        if remaining <= 0:
            on_passed()
            return
        await asyncio.sleep(min(remaining, 1.0))
