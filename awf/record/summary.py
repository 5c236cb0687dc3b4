"""What a person asks of a run at a glance, read off its files and never stored.

A listing of thousands of runs must cost little more than walking their folders, so a run's
summary reads its run.jsonl once, a line at a time, and parses only the lines it needs: the
first (the run), the last attempt's start and end, the last stage it entered, and the turns and
usage lines (for their cost, summed as they come). The lines are found by their `"kind"` before
they are parsed; a line is always parsed whole before it is believed, so a message that merely
mentions a kind is never taken for one. What it holds is a few lines and one cost a turn, never
the log.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from . import waiting
from .agent_slots import waiting_text
from .costs import TurnCosts, add_up
from .entries import AgentLine, AttemptEndLine, AttemptStartLine, Entry, ForkedFromFields, RunLine
from .errors import RecordError
from .file_kinds import RetryFields, WaitFields
from .files import is_temp_name
from .layout import RunPaths
from .liveness import is_alive
from .log import kind_of, lines_of, open_log, raw_lines, unreadable
from .roots import workflow_names
from .schemas import check

# The kinds of line a summary reads.
_KINDS = frozenset(
    (
        "attempt-start",
        "attempt-end",
        "status",
        "stage-start",
        "stage",
        "turn",
        "usage",
        "agent",
        "take",
        "race",
        "queued",
        "unqueued",
        "slot-wait",
        "turn-start",
        "cancel",
    )
)

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
    waiting: list[WaitFields] | None = None  # a parked run: the events and due times it waits on
    queued: int | None = None  # a run with events: the events in its inbox no wait has taken
    crash_looping: int | None = None  # interrupted attempts in a row, when wakes no longer restart it
    retry: RetryFields | None = None  # a stopped run: when awf serve retries it (wf.stop with retry_after)
    place: int | None = None  # its place in the queue awf serve starts, from 1 (read across the run root)
    slot: str | None = None  # a running attempt's turn that waits for a slot: `waiting for a claude slot (…)`
    branch: str | None = None  # the branch of the run's own worktree, with --worktree
    forked_from: ForkedFromFields | None = None  # made by awf fork: the source run and the stage
    # What the running attempt's workflow says it is doing (wf.status): its text and progress.
    wf_status: WfStatus | None = None

    def as_json(self) -> dict[str, Any]:
        from .clock import iso

        return {
            "workflow": self.workflow,
            "id": self.id,
            "status": self.status,
            "stage": self.stage,
            "waiting": self.waiting,
            "queued": self.queued,
            "place": self.place,
            "slot": self.slot,
            "crash_looping": self.crash_looping,
            "retry": self.retry,
            "attempts": self.attempts,
            "started": self.started,
            "moved": iso(self.moved),
            "cost": self.cost,
            "cost_unknown": self.cost_unknown,
            "pid": self.pid,
            "branch": self.branch,
            "forked_from": self.forked_from,
            "wf_status": self.wf_status,
            "record": str(self.dir),
        }


class WfStatus(TypedDict):
    """What a running attempt's workflow says it is doing (wf.status)."""

    text: str
    progress: float | None  # from 0 to 1, when the workflow says


def wf_status(entry: Mapping[str, Any]) -> WfStatus:
    """A status line as `awf runs` shows it."""
    progress = entry.get("progress")
    return {"text": str(entry.get("text", "")), "progress": progress if isinstance(progress, (int, float)) else None}


def run_folders(root: Path, workflow: str | None = None) -> Iterator[RunPaths]:
    """The folders under `root` that hold a run's log, without reading any of them."""
    for name in [workflow] if workflow is not None else workflow_names(root):
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
        handle = open_log(log)
    except FileNotFoundError:
        return None
    with handle:
        try:
            moved = os.fstat(handle.fileno()).st_mtime
        except OSError as error:
            raise RecordError(log, unreadable(error)) from None
        lines = lines_of(handle, log)
        first_line = next(lines, None)
        first = _entry(log, *first_line) if first_line is not None else None
        if first is None or first["kind"] != "run":
            raise RecordError(log, "does not start with a 'run' line: it is not the log of a run")
        seen = _Seen(log, events="events" in first)
        for offset, kind, raw in _kinded(log, lines):
            seen.add(offset, kind, raw)
    summary = RunSummary(
        workflow=_text(first, "workflow", log),
        id=_text(first, "id", log),
        dir=Path(folder),
        status="interrupted",
        stage=None,
        attempts=0,
        started=first["at"],
        moved=moved,
        cost=None,
    )
    if seen.any_cost:
        total = add_up(seen.costs.turns)
        summary.cost, summary.cost_unknown = (None if total.cost is None else round(total.cost, 10)), total.unknown
    _from_run_line(summary, first)
    if seen.events:
        summary.queued = waiting.queued(paths, seen.taken)
    queued = seen.parsed(seen.queued)
    if queued is not None:
        withdrawn = seen.parsed(seen.unqueued)
        if withdrawn is not None and withdrawn.get("token") == queued.get("token"):
            queued = None
    start = seen.parsed(seen.start)
    _read_attempt(summary, seen, start if start is not None and start["kind"] == "attempt-start" else None, log)
    if summary.status == "running":
        summary.slot = seen.slot_wait()
    if queued is not None and summary.status != "running":
        summary.status = "queued"  # an attempt placed on a scheduler waits for a node
    elif summary.status == "interrupted" and start is not None and seen.events:
        in_a_row = next((n for n in range(summary.attempts) if summary.attempts - n in seen.ended), summary.attempts)
        summary.crash_looping = waiting.crash_looping(in_a_row)
    return summary


def _from_run_line(summary: RunSummary, first: RunLine) -> None:
    """What the listing shows of the run line (its schema checked it as it was read): its
    worktree's branch, and the run it was forked from."""
    if "worktree" in first:
        summary.branch = first["worktree"]["branch"]
    summary.forked_from = first.get("forked_from")


def _read_attempt(summary: RunSummary, seen: _Seen, start: AttemptStartLine | None, log: str) -> None:
    """The status and stage of the run's last attempt (interrupted when it has none)."""
    if start is None:
        return  # created, and crashed before its first attempt began (or one is queued)
    folder = str(summary.dir)
    summary.attempts = _number(start, "attempt", log)
    end = seen.end_of(summary.attempts)
    if end is not None:
        summary.status = _text(end, "outcome", log)
        summary.stage = end.get("stage") or end.get("after")
        summary.waiting = end.get("waits")
        if "retry" in end and not seen.retry_withdrawn(summary.attempts):
            summary.retry = end["retry"]
        return
    entered = seen.parsed(seen.entered)
    summary.stage = entered["stage"] if entered is not None and entered["kind"] == "stage-start" else None
    pid = _number(start, "pid", log)
    if is_alive(pid, start.get("process_start"), os.path.join(folder, "attempt.lock")):
        summary.status, summary.pid, summary.process_start = "running", pid, start.get("process_start")
        said = seen.parsed(seen.status)
        if said is not None:
            summary.wf_status = wf_status(said)


_Raw = tuple[int, bytes]  # a line of the log, and the offset it starts at


class _Seen:
    """What a summary keeps of a log read start to end: the few lines it asks for, unparsed until
    the end says which are the last, and the turns' costs, summed as they come."""

    def __init__(self, path: str, *, events: bool) -> None:
        self.path = path
        self.events = events
        self.start: _Raw | None = None  # the last attempt-start
        self.ends: list[_Raw] = []  # the attempt-end lines since it
        self.entered: _Raw | None = None  # the last stage-start since it
        self.status: _Raw | None = None  # the last status (wf.status) since it
        self.queued: _Raw | None = None  # the last queued line since it
        self.unqueued: _Raw | None = None  # the last unqueued line since that
        self.slot_waits: list[_Raw] = []  # the slot-wait lines since it whose turn has not started
        self.cancels: list[_Raw] = []  # the cancel lines since it: one may withdraw a retry
        self.costs = TurnCosts()
        self.any_cost = False
        self.taken: set[str] = set()  # with events: the events waits took
        self.ended: set[int] = set()  # with events: the attempts that have an ending

    def add(self, offset: int, kind: str, raw: bytes) -> None:
        if kind == "attempt-start":
            self._begin(offset, raw)
        elif kind in ("slot-wait", "turn-start"):
            self._slots(offset, kind, raw)
        elif kind == "attempt-end":
            self.ends.append((offset, raw))
            end = self.parsed((offset, raw)) if self.events else None
            if end is not None and end["kind"] == "attempt-end":
                self.ended.add(end["attempt"])
        elif kind == "stage-start":
            self.entered = (offset, raw)
        elif kind == "status":
            self.status = (offset, raw)
        elif kind in ("queued", "unqueued", "cancel"):
            self._queue_line(kind, (offset, raw))
        elif kind in ("turn", "usage"):
            entry = self.parsed((offset, raw))
            if entry is not None:
                self.any_cost = True
                self.costs.add(entry)
        elif kind in ("take", "race") and self.events:
            entry = self.parsed((offset, raw))
            if entry is not None:
                self.taken |= waiting.taken_ids([entry])

    def parsed(self, line: _Raw | None) -> Entry | None:
        return _entry(self.path, *line) if line is not None else None

    def end_of(self, attempt: int) -> AttemptEndLine | None:
        """The attempt-end line of `attempt`, among those since the last attempt-start."""
        for line in self.ends:
            end = self.parsed(line)
            if end is not None and end["kind"] == "attempt-end" and end["attempt"] == attempt:
                return end
        return None

    def retry_withdrawn(self, attempt: int) -> bool:
        """Whether awf cancel withdrew the retry the end of `attempt` asked for."""
        for line in self.cancels:
            cancel = self.parsed(line)
            if cancel is None or cancel["kind"] != "cancel":
                continue
            if cancel.get("retry") is True and cancel["attempt"] == attempt:
                return True
        return False

    def _queue_line(self, kind: str, line: _Raw) -> None:
        """What is queued, and what withdraws it: an attempt from the queue, or a stop's retry."""
        if kind == "queued":
            self.queued, self.unqueued = line, None
        elif kind == "unqueued":
            self.unqueued = line
        else:
            self.cancels.append(line)

    def _begin(self, offset: int, raw: bytes) -> None:
        """An attempt starts: what the one before it was in, said or waited for is over."""
        self.start, self.ends, self.entered, self.queued, self.unqueued = (offset, raw), [], None, None, None
        self.status, self.slot_waits, self.cancels = None, [], []

    def _slots(self, offset: int, kind: str, raw: bytes) -> None:
        """A turn's wait for a slot, and the start that ends it; a turn-start is read only while a
        wait is open."""
        if kind == "slot-wait":
            self.slot_waits.append((offset, raw))
            return
        started = self.parsed((offset, raw)) if self.slot_waits else None
        if started is None or started["kind"] != "turn-start":
            return
        turn = (started["agent"], started["turn"])
        still = []
        for line in self.slot_waits:
            wait = self.parsed(line)
            if wait is None or wait["kind"] != "slot-wait" or (wait["agent"], wait["turn"]) != turn:
                still.append(line)
        self.slot_waits = still

    def slot_wait(self) -> str | None:
        """What the last turn still waiting for a slot says, if any."""
        wait = self.parsed(self.slot_waits[-1]) if self.slot_waits else None
        if wait is None or wait["kind"] != "slot-wait":
            return None
        return waiting_text(wait["harness"], [str(who) for who in wait["held_by"]])


# A key and its value as json.dumps and jq write them: `"kind": "turn"` or `"kind":"turn"`.
_KIND_AT = re.compile(rb'"kind"\s*:\s*"(' + b"|".join(kind.encode() for kind in _KINDS) + rb')"')


def _kinded(path: str, lines: Iterator[_Raw]) -> Iterator[tuple[int, str, bytes]]:
    """The lines of the kinds a summary reads, with their kind: off the bytes of a line as awf
    wrote it, and parsed for one in another form that may be of such a kind (a line is always
    parsed whole before it is believed, so a line that merely holds such a key is never taken
    for one)."""
    for offset, raw in lines:
        kind = kind_of(raw)
        if kind is None and _KIND_AT.search(raw) is not None:
            entry = _entry(path, offset, raw)
            kind = entry["kind"] if entry is not None else None
        if kind in _KINDS:
            yield offset, kind, raw


def _entry(path: str, offset: int, raw: bytes) -> Entry | None:
    """The entry at `offset`; None for a line that is not JSON, which every reader of the log
    passes over (see log.read_lines)."""
    try:
        entry = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str):
        raise RecordError(path, f"the line at byte {offset} is not an entry of the log (no 'kind')")
    # Only the few lines a summary reads are parsed, and each is checked as every reader checks it.
    check("log-entry", entry, path, f"the line at byte {offset} ")
    return cast(Entry, entry)


def _text(entry: Mapping[str, object], key: str, log: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        raise RecordError(log, f"its {entry.get('kind')} line has no {key!r} text")
    return value


def _number(entry: Mapping[str, object], key: str, log: str) -> int:
    value = entry.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordError(log, f"its {entry.get('kind')} line has no whole number {key!r}")
    return value


def cost_lines(log: Path) -> Iterator[Entry]:
    """The `turn` and `usage` lines of a log, in order, read one at a time: what its cost is read
    from. A log that cannot be read has none (its reader says why elsewhere)."""
    try:
        yield from cost_entries(str(log), raw_lines(log))
    except (OSError, RecordError):
        return


def cost_entries(path: str, lines: Iterable[_Raw]) -> Iterator[Entry]:
    """The `turn` and `usage` lines among `lines` of the log at `path`, parsed and checked."""
    for offset, kind, raw in _kinded(path, iter(lines)):
        if kind in ("turn", "usage"):
            entry = _entry(path, offset, raw)
            if entry is not None:
                yield entry


def agent_line(log: Path, attempt: int, key: str) -> AgentLine | None:
    """The `agent` line that opened agent `key` in an attempt, or None."""
    found = None
    try:
        for offset, kind, raw in _kinded(str(log), raw_lines(log)):
            if kind == "agent":
                entry = _entry(str(log), offset, raw)
                if (
                    entry is not None
                    and entry["kind"] == "agent"
                    and (entry["attempt"], entry["agent"]) == (attempt, key)
                ):
                    found = entry
    except (OSError, RecordError):
        return found
    return found
