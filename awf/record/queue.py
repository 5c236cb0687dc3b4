"""The queue `awf serve` starts, read off the runs' logs: what waits in it, in the order it starts.

A run waits in the queue while its last `queued` line on serve is answered by no attempt (whose
`attempt-start` carries the line's token) and withdrawn by no `unqueued` line. Nothing else is
kept: the order is read off the lines each time, highest priority first, then the oldest line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from . import folder
from .entries import QueuedLine
from .errors import RecordError
from .layout import RunPaths
from .summary import run_folders


@dataclass(frozen=True)
class Waiting:
    """A run whose next attempt waits in the queue."""

    paths: RunPaths
    line: QueuedLine

    @property
    def token(self) -> str:
        return self.line["token"]

    @property
    def priority(self) -> int:
        return self.line.get("priority", 0)

    def order(self) -> tuple[int, str, str]:
        """Highest priority first; among equals the oldest line, then the run's name."""
        return (-self.priority, self.line["at"], self.paths.name)


@dataclass(frozen=True)
class Interrupted:
    """A run whose last attempt serve started from the queue, and which was interrupted (a crash,
    a reboot) with no continue queued for it yet."""

    paths: RunPaths
    attempt: int  # the interrupted attempt
    started: str  # when it started (ISO 8601)
    in_a_row: int  # the run's last attempts interrupted, counting back from it
    placed: QueuedLine  # the `queued` line it was started from


@dataclass
class Queue:
    """The run root's queue, and the runs with an attempt alive as it was read."""

    waiting: list[Waiting]  # in the order they start
    alive: list[RunPaths]  # runs whose last attempt runs now
    problems: list[RecordError]
    interrupted: list[Interrupted] = field(default_factory=list)

    def place(self, name: str) -> int | None:
        """The run's place in the queue, from 1; None when it does not wait in it."""
        return next((n for n, one in enumerate(self.waiting, 1) if one.paths.name == name), None)


def waiting_of(history: folder.History) -> QueuedLine | None:
    """The `queued` line on serve the run's next attempt waits on, if any."""
    queued = history.queued
    if queued is None or queued["on"] != "serve":
        return None
    return queued


@dataclass
class _Run:
    """What the queue takes of one run's log, kept while the log stays the same."""

    stamp: tuple[int, int]  # the log's modification time and size as it was read
    last: folder.Attempt | None
    live: bool  # whether its last attempt was alive then (or one waited on Ray for a node)
    placed: bool  # an attempt waited on Ray: read again each time, as a node elsewhere starts it
    waiting: Waiting | None
    interrupted: Interrupted | None


# A run's read, by run name, kept between reads of one serve: a log that has not changed since
# is not read again (its last attempt's liveness is looked at each time all the same).
Reads = dict[str, _Run]


def read_queue(root: Path, runs: Iterable[RunPaths] | None = None, kept: Reads | None = None) -> Queue:
    """Every run under `root` read once: what waits in the queue, and which attempts are alive.
    A run whose log cannot be read is set aside in `problems`, never in the queue. With `kept`,
    a run whose log has not changed since it was kept there is not read again."""
    queue = Queue([], [], [])
    for paths in run_folders(root) if runs is None else runs:
        try:
            run = _read(paths, kept)
        except FileNotFoundError:
            continue  # a folder being made, or not a run
        except RecordError as problem:
            queue.problems.append(problem)
            continue
        if run.live:
            queue.alive.append(paths)
        if run.waiting is not None:
            queue.waiting.append(run.waiting)
        if run.interrupted is not None:
            queue.interrupted.append(run.interrupted)
    queue.waiting.sort(key=Waiting.order)
    return queue


def _read(paths: RunPaths, kept: Reads | None) -> _Run:
    stat = os.stat(paths.log)
    stamp = (stat.st_mtime_ns, stat.st_size)
    known = kept.get(paths.name) if kept is not None else None
    if known is not None and known.stamp == stamp and not known.placed:
        live = known.last is not None and known.last.end is None and known.last.is_live()
        if live == known.live:
            return known
    history = folder.read_history(paths, ended_stages=False)
    # An attempt placed on Ray that waits for a node counts as alive: it starts once one is free.
    on_ray = history.queued is not None and history.queued.get("on") == "ray"
    live = on_ray or (history.last is not None and history.last.is_live())
    line = waiting_of(history)
    run = _Run(
        stamp,
        history.last,
        live,
        on_ray,
        Waiting(paths, line) if line is not None else None,
        interrupted_of(paths, history) if history.queued is None else None,
    )
    if kept is not None:
        kept[paths.name] = run
    return run


def interrupted_of(paths: RunPaths, history: folder.History) -> Interrupted | None:
    """The run's last attempt, when serve started it from the queue and it was interrupted, and
    no continue was queued for it since (queued again once, whatever became of that)."""
    last = history.last
    if last is None or "events" in history.run or last.end is not None or last.is_live():
        return None  # a run with events is woken instead, with the same backoff
    placed_by = last.start.get("placed")
    token = placed_by is not None and placed_by["on"] == "serve" and placed_by.get("token")
    if not token:
        return None
    placed: QueuedLine | None = None
    for line in history.lines(frozenset({"queued"})):
        queued = cast(QueuedLine, line.entry)
        if queued.get("interrupted") == last.number:
            return None
        if queued["token"] == token:
            placed = queued
    if placed is None:
        return None
    in_a_row = 0
    for attempt in reversed(history.attempts):
        if attempt.end is not None:
            break
        in_a_row += 1
    return Interrupted(paths, last.number, str(last.start["at"]), in_a_row, placed)
