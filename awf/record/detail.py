"""One run in full, read off its files: its input, each attempt, each current stage record, and
the command that goes on. Nothing here is stored; all of it is derived on every read."""

from __future__ import annotations

import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from . import waiting
from .clock import age, iso
from .costs import CostSum, TurnCost, TurnCosts, add_up, breakdown
from .entries import Entry, StatusLine
from .errors import RecordError
from .file_kinds import RetryFields, StageRecord, StageRecords, WaitFields
from .folder import Attempt, History, read_history, read_json_file, read_stage_records, refuse_links
from .layout import RunPaths, working_folder
from .log import read_lines
from .redo import stale_stages
from .roots import RUNS_DIR
from .summary import WfStatus, wf_status


class ShownWorktree(TypedDict):
    """A run's worktree as `awf runs WORKFLOW/ID` shows it: where, on which branch, and its state."""

    path: str
    branch: str
    base: str
    base_ref: str
    exists: bool  # False: removed, and a continue makes it again
    changes: bool | None  # uncommitted changes; None: not known


@dataclass
class RunDetail:
    """What `awf runs WORKFLOW/ID` shows."""

    paths: RunPaths
    history: History
    stages: StageRecords
    turn_costs: list[TurnCost] = field(default_factory=list)
    moved: float = 0.0
    go_on: str | None = None
    # Stages whose file no longer holds the record run.jsonl holds for it: edited by hand, with
    # the summary a continue made of the edited value since, where one did.
    edited: dict[str, str | None] = field(default_factory=dict)
    # The files (or lines of run.jsonl) that could not be read; the rest is shown without them.
    unreadable: list[RecordError] = field(default_factory=list)
    queued: int | None = None  # a run with events: the events in its inbox no wait has taken
    # A run with events after a redo: the current records that will run again, and why.
    stale: dict[str, str] = field(default_factory=dict)
    # A run with a worktree: whether it holds changes not committed (None: not looked, or unreadable).
    worktree_changes: bool | None = None
    # What the running attempt's workflow says it is doing (wf.status).
    wf_status: WfStatus | None = None

    @property
    def status(self) -> str:
        return self.history.status

    @property
    def total(self) -> CostSum:
        return add_up(self.turn_costs)

    @property
    def cost(self) -> float | None:
        cost = self.total.as_json()["cost"]
        return None if cost is None else float(cost)

    def attempt_total(self, number: int) -> CostSum:
        return add_up(turn for turn in self.turn_costs if turn.attempt == number)

    @property
    def problems(self) -> list[RecordError]:
        return [*self.unreadable, *(record for record in self.stages.values() if isinstance(record, RecordError))]

    def as_json(self) -> dict[str, Any]:
        run = self.history.run
        return {
            "version": 1,
            "workflow": self.paths.workflow,
            "id": self.paths.id,
            "status": self.status,
            "stage": stage_of(self.history.last),
            "argv": run.get("argv"),
            "cwd": run.get("cwd"),
            "file": run.get("file"),
            "sandbox": run.get("sandbox"),
            "worktree": self._worktree(),
            "forked_from": run.get("forked_from"),
            "started": run.get("at"),
            "moved": iso(self.moved),
            "cost": self.cost,
            "cost_unknown": self.total.unknown,
            "costs": breakdown(self.turn_costs),
            "record": str(self.paths.dir),
            "attempts": [
                attempt_json(attempt, self.attempt_total(attempt.number)) for attempt in self.history.attempts
            ],
            "stages": [self.stage_json(name) for name in self.stages],
            "go_on": self.go_on,
            "report": str(self.paths.report) if self.paths.report.exists() else None,
            "problems": [{"file": str(problem.path), "problem": problem.problem} for problem in self.problems],
            "waiting": self.waiting,
            "queued": self.queued,
            "crash_looping": self.crash_looping,
            "retry": self.retry,
            "wf_status": self.wf_status,
        }

    def _worktree(self) -> ShownWorktree | None:
        recorded = self.history.run.get("worktree")
        if recorded is None:
            return None
        return {
            "path": recorded["path"],
            "branch": recorded["branch"],
            "base": recorded["base"],
            "base_ref": recorded["base_ref"],
            "exists": Path(recorded["path"]).is_dir(),
            "changes": self.worktree_changes,
        }

    def stage_json(self, name: str) -> dict[str, Any]:
        item = stage_json(name, self.stages[name])
        if name in self.edited:
            item["edited"] = True
            item["summary"] = self.edited[name] or item.get("summary")
        if name in self.stale:
            item["stale"] = self.stale[name]
        return item

    @property
    def waiting(self) -> list[WaitFields] | None:
        last = self.history.last
        return last.end.get("waits") if last is not None and last.end is not None else None

    @property
    def retry(self) -> RetryFields | None:
        return waiting.pending_retry(self.history)

    @property
    def crash_looping(self) -> int | None:
        if "events" not in self.history.run or self.status != "interrupted":
            return None
        in_a_row = 0
        for attempt in reversed(self.history.attempts):
            if attempt.end is not None:
                break
            in_a_row += 1
        return waiting.crash_looping(in_a_row)


class _LogRead:
    """What one read of run.jsonl, a line at a time, tells of a run beyond its history: each
    turn's cost, the events its waits took, what tells which records a redo left stale (a run
    with `events`), and the last record in the log of each stage in `current` with the summary a
    continue made of its value since. Only those are kept, never the lines."""

    def __init__(self, paths: RunPaths, current: Collection[str], *, events: bool) -> None:
        self.costs = TurnCosts()
        self.taken: set[str] = set()
        self.redo_lines: list[Entry] = []
        self.logged: dict[str, StageRecord] = {}
        self.shown: dict[str, str | None] = {}
        self.status: StatusLine | None = None  # the last wf.status of the last attempt
        self._current = current
        self._events = events
        for line in read_lines(paths.log, problems=[]):
            self._take(line.entry)

    def _take(self, entry: Entry) -> None:
        if entry["kind"] == "attempt-start":
            self.status = None
        elif entry["kind"] == "status":
            self.status = entry
        elif entry["kind"] == "turn" or entry["kind"] == "usage":
            self.costs.add(entry)
        elif entry["kind"] == "stage" and entry["stage"] in self._current:
            self.logged[entry["stage"]] = entry["record"]
            self.shown.pop(entry["stage"], None)
        elif entry["kind"] == "stage-reused" and "summary" in entry and entry["stage"] in self._current:
            self.shown[entry["stage"]] = entry["summary"]
        elif entry["kind"] == "take" or entry["kind"] == "race":
            self.taken |= waiting.taken_ids([entry])
        if self._events and entry["kind"] in ("redo", "redo-reached", "stage-start", "stage-reused"):
            self.redo_lines.append(entry)  # what stale_stages reads: a redo, and the stages entered


def read_detail(paths: RunPaths, here: Path | None = None) -> RunDetail:
    """Read one run whole. Raises FileNotFoundError when it has no log, RecordError when the log
    cannot be read at all. A damaged line of the log, an unreadable stage record, out.json or
    attempt.pid is kept as its error, to be shown beside the rest."""
    unreadable: list[RecordError] = []
    refuse_links(paths)  # as a continue does: nothing of a run is read through a link
    history = read_history(paths, problems=unreadable)
    moved = paths.log.stat().st_mtime
    stages = read_stage_records(paths)
    seen = _LogRead(paths, stages, events="events" in history.run)
    detail = RunDetail(paths, history, stages, seen.costs.turns, moved, unreadable=unreadable)
    if seen.status is not None and detail.status == "running":
        detail.wf_status = wf_status(seen.status)
    if "events" in history.run:
        try:
            detail.queued = waiting.queued(paths, seen.taken)
        except RecordError as problem:
            unreadable.append(problem)
        detail.stale = stale_stages(seen.redo_lines, stages)
    for name, record in stages.items():
        if isinstance(record, dict) and name in seen.logged and record != seen.logged[name]:
            detail.edited[name] = seen.shown.get(name)
    for file, kind in ((paths.out, "out"), (paths.pid, "attempt-pid")):
        try:
            read_json_file(file, kind)
        except FileNotFoundError:
            continue
        except RecordError as problem:
            unreadable.append(problem)
    detail.go_on = go_on_command(history, paths, here or Path.cwd())
    return detail


def stage_of(attempt: Attempt | None) -> str | None:
    """The stage an attempt is in, or ended in."""
    if attempt is None:
        return None
    if attempt.end is not None:
        return attempt.end.get("stage") or attempt.end.get("after")
    return attempt.stages_started[-1] if attempt.stages_started else None


def attempt_json(attempt: Attempt, cost: CostSum | None = None) -> dict[str, Any]:
    end: Mapping[str, Any] = attempt.end or {}
    live = attempt.status == "running"
    return {
        "attempt": attempt.number,
        "status": attempt.status,
        "exit_code": end.get("exit_code"),
        "stage": stage_of(attempt),
        "reason": end.get("reason"),
        "flags": {key: value for key, value in attempt.flags.items() if value not in (None, False)},
        "pid": attempt.pid if live else None,
        "started": attempt.start.get("at"),
        "ended": end.get("at"),
        "file": attempt.start.get("file"),
        "cost": cost.as_json()["cost"] if cost else None,
        "cost_unknown": cost.unknown if cost else 0,
        "host": attempt.start.get("host"),
        "placed": attempt.start.get("placed"),
    }


def stage_json(name: str, record: StageRecord | RecordError) -> dict[str, Any]:
    if isinstance(record, RecordError):
        return {"stage": name, "problem": str(record)}
    seconds = age(record.get("ended"))
    return {
        "stage": name,
        "outcome": record["outcome"],
        "attempt": record["attempt"],
        "origin": record.get("origin"),
        "ended": record.get("ended"),
        "age": round(seconds, 3) if seconds is not None else None,
        "summary": record.get("summary"),
        "reason": record.get("reason"),
    }


def go_on_command(history: History, paths: RunPaths, here: Path) -> str | None:
    """The command that adds the next attempt, or None when the run is running or completed.

    An attempt that ended recorded its own; one that was interrupted never could, so it is made
    here from the run's recorded file, with the --from-stage the attempt was redoing from when it
    had not reached that stage yet (a plain continue would not redo it).
    """
    last = history.last
    if last is not None and last.end is not None:
        return last.end.get("go_on")
    if last is not None and last.is_live():
        return None
    file = (last.start.get("file") if last else None) or history.run.get("file")
    if not file:
        return None
    words = ["awf", "run", _shorter(file, here), "--id", paths.id, "--continue"]
    cwd = working_folder(history.run, paths.root).now if history.run.get("cwd") else None
    if cwd and paths.root != (cwd / RUNS_DIR).absolute():
        words += ["--run-root", str(paths.root)]
    elif cwd and cwd != here:
        words += ["--cwd", str(cwd)]
    from_stage = last.flags.get("from_stage") if last else None
    if from_stage and last is not None and last.start_point is None:
        words += ["--from-stage", from_stage]
    return shlex.join(words)


def _shorter(file: str, here: Path) -> str:
    """The recorded file relative to `here` when it is below it, as a person would type it."""
    try:
        return str(Path(file).relative_to(here))
    except ValueError:
        return file
