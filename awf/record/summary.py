"""What a person asks of a run at a glance, read off its files and never stored.

A listing of thousands of runs must cost little more than walking their folders, so a run's
summary reads its run.jsonl once and parses only the lines it needs: the first (the run), the
last attempt's start and end, the last stage it entered, and the turns and usage lines (for
their cost). The
lines are found by their `"kind"` before they are parsed; a line is always parsed whole before
it is believed, so a message that merely mentions a kind is never taken for one.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import waiting
from .costs import add_up, turn_costs
from .errors import RecordError
from .files import NO_FOLLOW, is_temp_name
from .layout import RunPaths
from .liveness import is_alive
from .log import unreadable
from .schemas import check

# A key and its value as json.dumps and jq write them: `"kind": "turn"` or `"kind":"turn"`.
_KIND_AT = {
    kind: re.compile(rb'"kind"\s*:\s*"' + kind.encode() + rb'"')
    for kind in (
        "attempt-start",
        "attempt-end",
        "stage-start",
        "stage",
        "turn",
        "usage",
        "agent",
        "take",
        "race",
        "queued",
        "unqueued",
    )
}

STATUSES = ("queued", "running", "completed", "parked", "stopped", "failed", "timed-out", "cancelled", "interrupted")


@dataclass
class RunSummary:
    """One row of `awf runs`."""

    workflow: str
    id: str
    dir: Path
    status: str
    stage: str | None  # the stage it is in, or ended in
    attempts: int
    started: str | None  # when the run was created (ISO 8601)
    moved: float  # when its log last changed (seconds since the epoch)
    cost: float | None  # the sum of its turns' costs, where any is known
    cost_unknown: int = 0  # turns whose cost is not known
    pid: int | None = None  # the live attempt's process
    process_start: str | None = None  # and its start time, which tells it from a reused pid
    waiting: list[dict[str, Any]] | None = None  # a parked run: the events and due times it waits on
    queued: int | None = None  # a run with events: the events in its inbox no wait has taken
    crash_looping: int | None = None  # interrupted attempts in a row, when wakes no longer restart it
    branch: str | None = None  # the branch of the run's own worktree, with --worktree

    def as_json(self) -> dict[str, Any]:
        from .clock import iso

        return {
            "workflow": self.workflow,
            "id": self.id,
            "status": self.status,
            "stage": self.stage,
            "waiting": self.waiting,
            "queued": self.queued,
            "crash_looping": self.crash_looping,
            "attempts": self.attempts,
            "started": self.started,
            "moved": iso(self.moved),
            "cost": self.cost,
            "cost_unknown": self.cost_unknown,
            "pid": self.pid,
            "branch": self.branch,
            "record": str(self.dir),
        }


def run_folders(root: Path, workflow: str | None = None) -> Iterator[RunPaths]:
    """The folders under `root` that hold a run's log, without reading any of them."""
    try:
        workflows = (
            [workflow]
            if workflow is not None
            else sorted(entry.name for entry in os.scandir(root) if entry.is_dir() and not entry.name.startswith("."))
        )
    except FileNotFoundError:
        return
    for name in workflows:
        try:
            # A run being made is a temp folder until its first line is durable: not a run yet.
            ids = sorted(
                entry.name for entry in os.scandir(root / name) if entry.is_dir() and not is_temp_name(entry.name)
            )
        except (FileNotFoundError, NotADirectoryError):
            continue
        for run_id in ids:
            yield RunPaths(root, name, run_id)


def summarize(paths: RunPaths) -> RunSummary | None:
    """The summary of one run, or None when its folder holds no log (not a run).

    Raises RecordError naming run.jsonl when it cannot be read or a line it needs is damaged.
    """
    # Plain strings, not pathlib: across 10,000 runs, building paths costs more than reading.
    folder = os.path.join(str(paths.root), paths.workflow, paths.id)
    log = os.path.join(folder, "run.jsonl")
    try:
        with open(os.open(log, os.O_RDONLY | NO_FOLLOW), "rb") as handle:
            moved = os.fstat(handle.fileno()).st_mtime
            data = handle.read()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise RecordError(log, unreadable(error)) from None
    data = data[: data.rfind(b"\n") + 1]  # a last line with no newline is a write a crash cut short
    reader = _Lines(log, data)
    first = reader.line_at(0) if data else None
    if first is None or first.get("kind") != "run":
        raise RecordError(log, "does not start with a 'run' line: it is not the log of a run")
    start_at, start = reader.last("attempt-start")
    queued_at, queued = reader.last("queued", after=max(start_at, 0))
    summary = RunSummary(
        workflow=_text(first, "workflow", log),
        id=_text(first, "id", log),
        dir=Path(folder),
        status="interrupted",
        stage=None,
        attempts=0,
        started=first.get("at"),
        moved=moved,
        cost=None,
    )
    summary.cost, summary.cost_unknown = reader.cost()
    worktree = first.get("worktree")
    if isinstance(worktree, dict) and isinstance(worktree.get("branch"), str):
        summary.branch = worktree["branch"]
    if "events" in first:
        taken = waiting.taken_ids(entry for kind in ("take", "race") for _, entry in reader._matches(kind))
        summary.queued = waiting.queued(paths, taken)
    if queued is not None:
        _, withdrawn = reader.last("unqueued", after=queued_at)
        if withdrawn is not None and withdrawn.get("token") == queued.get("token"):
            queued = None
    _read_attempt(summary, reader, start_at, start, log)
    if queued is not None and summary.status != "running":
        summary.status = "queued"  # an attempt placed on a scheduler waits for a node
    elif summary.status == "interrupted" and start is not None and "events" in first:
        ended = {entry.get("attempt") for _, entry in reader._matches("attempt-end")}
        in_a_row = next((n for n in range(summary.attempts) if summary.attempts - n in ended), summary.attempts)
        summary.crash_looping = waiting.crash_looping(in_a_row)
    return summary


def _read_attempt(summary: RunSummary, reader: _Lines, start_at: int, start: dict[str, Any] | None, log: str) -> None:
    """The status and stage of the run's last attempt (interrupted when it has none)."""
    if start is None:
        return  # created, and crashed before its first attempt began (or one is queued)
    folder = str(summary.dir)
    summary.attempts = _number(start, "attempt", log)
    _, end = reader.first("attempt-end", after=start_at, attempt=summary.attempts)
    if end is not None:
        summary.status = _text(end, "outcome", log)
        summary.stage = end.get("stage") or end.get("after")
        summary.waiting = end.get("waits")
        return
    _, entered = reader.last("stage-start", after=start_at)
    summary.stage = entered.get("stage") if entered else None
    pid = _number(start, "pid", log)
    if is_alive(pid, start.get("process_start"), os.path.join(folder, "attempt.lock")):
        summary.status, summary.pid, summary.process_start = "running", pid, start.get("process_start")


class _Lines:
    """Finds lines of one kind in a log's bytes and parses only those."""

    def __init__(self, path: Path | str, data: bytes) -> None:
        self.path = path
        self.data = data

    def line_at(self, offset: int) -> dict[str, Any] | None:
        """The entry at `offset`; None for a line that is not JSON, which every reader of the log
        passes over (see log.read_lines)."""
        end = self.data.find(b"\n", offset)
        raw = self.data[offset : end if end >= 0 else len(self.data)]
        try:
            entry = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str):
            raise RecordError(self.path, f"the line at byte {offset} is not an entry of the log (no 'kind')")
        # Only the few lines a summary reads are parsed, and each is checked as every reader checks it.
        check("log-entry", entry, Path(self.path), f"the line at byte {offset} ")
        return entry

    def _start_of_line(self, position: int) -> int:
        return self.data.rfind(b"\n", 0, position) + 1

    def _matches(self, kind: str, after: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
        for match in _KIND_AT[kind].finditer(self.data, after):
            offset = self._start_of_line(match.start())
            entry = self.line_at(offset)
            if entry is not None and entry["kind"] == kind:
                yield offset, entry

    def first(self, kind: str, *, after: int = 0, attempt: int | None = None) -> tuple[int, dict[str, Any] | None]:
        for offset, entry in self._matches(kind, after):
            if attempt is None or entry.get("attempt") == attempt:
                return offset, entry
        return -1, None

    def last(self, kind: str, *, after: int = 0) -> tuple[int, dict[str, Any] | None]:
        """The last line of `kind` at or after byte `after`, searched from the end a block at a
        time: the lines a summary wants sit near the end of a long log."""
        pattern = _KIND_AT[kind]
        end = len(self.data)
        while end > after:
            block_start = max(after, self._start_of_line(max(0, end - 65536)))
            for match in reversed(list(pattern.finditer(self.data, block_start, end))):
                offset = self._start_of_line(match.start())
                entry = self.line_at(offset)
                if entry is not None and entry["kind"] == kind:
                    return offset, entry
            end = block_start
        return -1, None

    def cost(self) -> tuple[float | None, int]:
        """What the run's turns cost where it is known, and how many turns' cost is not."""
        if b'"turn"' not in self.data and b'"usage"' not in self.data:
            return None, 0
        lines = sorted([*self._matches("turn", 0), *self._matches("usage", 0)], key=lambda found: found[0])
        total = add_up(turn_costs(entry for _, entry in lines))
        return (None if total.cost is None else round(total.cost, 10)), total.unknown


def _text(entry: dict[str, Any], key: str, log: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        raise RecordError(log, f"its {entry.get('kind')} line has no {key!r} text")
    return value


def _number(entry: dict[str, Any], key: str, log: str) -> int:
    value = entry.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordError(log, f"its {entry.get('kind')} line has no whole number {key!r}")
    return value


def cost_lines(log: Path) -> list[dict[str, Any]]:
    """The `turn` and `usage` lines of a log, in order: what its cost is read from."""
    try:
        with open(log, "rb") as handle:
            data = handle.read()
    except OSError:
        return []
    data = data[: data.rfind(b"\n") + 1]
    if b'"turn"' not in data and b'"usage"' not in data:
        return []
    reader = _Lines(log, data)
    found = sorted([*reader._matches("turn", 0), *reader._matches("usage", 0)], key=lambda each: each[0])
    return [entry for _, entry in found]


def agent_line(log: Path, attempt: int, key: str) -> dict[str, Any] | None:
    """The `agent` line that opened agent `key` in an attempt, or None."""
    try:
        with open(log, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    data = data[: data.rfind(b"\n") + 1]
    found = None
    for _, entry in _Lines(log, data)._matches("agent", 0):
        if entry.get("attempt") == attempt and entry.get("agent") == key:
            found = entry
    return found
