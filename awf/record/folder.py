"""One run's folder: claiming it, its attempts, its stage records and its output.

Every write here is atomic or an fsynced append. The engine decides what to write; this module
only knows how to write it so that a crash leaves the old state or the new one.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import json
import os
import re
import shutil
import socket
import sys
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

from . import entries, file_kinds
from .errors import RecordError
from .file_kinds import StageRecord, StageRecords
from .files import (
    ensure_dir,
    fsync_dir,
    is_temp_name,
    read_bytes,
    remove_temp_files,
    temp_name,
    write_atomic,
    write_failed,
    write_json,
    write_json_lines,
)
from .layout import RunPaths, prepare_root
from .liveness import is_alive, process_start, this_boot
from .locks import holding, take
from .log import Line, lines_at, lines_of, open_log, parse_lines, raw_lines, read_lines, set_torn_tail_aside, unreadable
from .schemas import check

# The record's one entry point for the layers above: what they write and read goes through here.
__all__ = [
    "HISTORY_KINDS",
    "Attempt",
    "AttemptClaim",
    "History",
    "RecordError",
    "Refused",
    "RunPaths",
    "claim_existing",
    "clear_leftovers",
    "create_fork",
    "create_run",
    "existing_id_like",
    "holder",
    "invalidate",
    "read_history",
    "read_json_file",
    "read_lines",
    "read_stage_records",
    "refuse_if_taken",
    "remove_pid",
    "set_stage_value",
    "write_out",
    "write_pid",
    "write_stage_record",
]


class Refused(Exception):
    """The run or attempt cannot be claimed; nothing was started."""


def read_json_file(path: Path | str, kind: str) -> dict[str, Any]:
    """A whole JSON file of the record, checked against its schema."""
    try:
        data = read_bytes(path)
        # As a text file is read: UTF-8, strictly, with its line ends made "\n".
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise
    except OSError as error:
        raise RecordError(path, unreadable(error)) from None
    except UnicodeDecodeError as error:
        raise RecordError(path, f"cannot be read: {error}") from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as error:
        raise RecordError(path, f"is not JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    check(kind, obj, path)
    if not isinstance(obj, dict):  # every record file is an object; its schema says so too
        raise RecordError(path, "is not a JSON object")
    return obj


@dataclass
class Attempt:
    """An attempt as read off the log."""

    number: int
    start: entries.AttemptStartLine
    end: entries.AttemptEndLine | None = None
    stages_started: list[str] = field(default_factory=list)
    stages_recorded: list[str] = field(default_factory=list)
    start_point: entries.StartPointLine | None = None
    lock: Path | None = None  # the run's attempt lock: it tells a live attempt on another machine

    @property
    def pid(self) -> int:
        return int(self.start["pid"])

    @property
    def flags(self) -> entries.AttemptFlags:
        return self.start.get("flags") or {}

    def is_live(self) -> bool:
        return self.end is None and is_alive(self.pid, self.start.get("process_start"), self.lock)

    @property
    def status(self) -> str:
        if self.end is not None:
            return str(self.end["outcome"])
        return "running" if self.is_live() else "interrupted"

    @property
    def open_stage(self) -> str | None:
        """The stage this attempt was in when its log stops: started and never recorded."""
        if self.stages_started and self.stages_started[-1] not in self.stages_recorded:
            return self.stages_started[-1]
        return None


@dataclass
class History:
    """What run.jsonl says of a run, from one read of it.

    The run, its attempts and what is queued are read at once, a line at a time; of every other
    line only its kind and offset are kept. A kind asked for later (`lines`) is read from those
    offsets alone, through the same open file: an attempt's start asks for a few kinds (agents
    left running, their panes, turns to settle, events), each once, and most continues for none.
    """

    run: entries.RunLine
    attempts: list[Attempt]
    queued: entries.QueuedLine | None = None  # an attempt placed on a scheduler that has not started
    log: Path | None = None  # the log it was read from
    index: dict[str, array[int]] = field(default_factory=dict)  # each kind's lines, by offset
    handle: BinaryIO | None = None  # the log, open since it was read
    read_to: int = 0  # the end of the lines it read: what comes after was appended since

    def lines(self, kinds: frozenset[str], *, validate: bool = True, since: bool = False) -> Iterator[Line]:
        """The lines of `kinds`, as read_lines gives them, of the log as the history read it; with
        `since`, and those appended after it was read (by this attempt), through the same file."""
        found = [self.index[kind] for kind in kinds if kind in self.index]
        if self.log is None or self.handle is None or not (found or since):
            return iter(())
        at: Iterable[tuple[int, bytes]] = lines_at(self.handle, self.log, heapq.merge(*found))
        if since:
            at = itertools.chain(at, lines_of(self.handle, self.log, start=self.read_to))
        return parse_lines(self.log, at, kinds=kinds, validate=validate)

    def has(self, kind: str) -> bool:
        """Whether the log held a line of `kind` when the history was read."""
        return kind in self.index

    @property
    def last(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def status(self) -> str:
        status = self.last.status if self.last else "interrupted"
        if self.queued is not None and status != "running":
            return "queued"
        return status


# What read_history makes of the log; the other kinds (turns, logs, reuse, events) it skips unread.
HISTORY_KINDS = frozenset(
    {"run", "attempt-start", "attempt-end", "stage-start", "stage", "start-point", "queued", "unqueued"}
)
# The head of a stage's lines as awf writes them, to tell their attempt without reading them.
_STAGE_LINE = re.compile(rb'\{"version": \d+, "kind": "stage(?:-start)?", "at": "[^"]*", "attempt": (\d+),')


def read_history(paths: RunPaths, *, ended_stages: bool = True, problems: list[RecordError] | None = None) -> History:
    """Read the whole log of a run into its attempts, a line at a time: what is kept is the
    run's attempts with the names of their stages, and the offset of each line, never the lines.

    With `ended_stages=False` the stage lines of attempts that have an ending are passed over
    unread (their Attempt lists no stages): only an attempt that
    never ended needs its stages, to tell the one it was in, and a continue of a run of thousands
    of stages would read two lines for each. Which attempts ended is read first, off the log's
    `attempt-end` lines alone. Given `problems`, a damaged line is added to it and passed over
    (see read_lines).
    """
    handle = open_log(paths.log)
    try:
        history = _read_history(paths, handle, ended_stages, problems)
    except BaseException:
        handle.close()
        raise
    weakref.finalize(history, handle.close)  # the file stays open as long as its history is asked
    return history


def _read_history(paths: RunPaths, handle: BinaryIO, ended_stages: bool, problems: list[RecordError] | None) -> History:
    keep = None
    stop = None
    if not ended_stages:
        ended = _Span(lines_of(handle, paths.log))
        keep = _of_open_attempts(paths.log, ended)
        stop = ended.end
    run: entries.RunLine | None = None
    attempts: dict[int, Attempt] = {}
    queued: entries.QueuedLine | None = None
    index: dict[str, array[int]] = {}

    def add(kind: str, offset: int) -> None:
        index.setdefault(kind, array("q")).append(offset)

    span = _Span(lines_of(handle, paths.log, stop=stop))
    for line in parse_lines(paths.log, span, kinds=HISTORY_KINDS, keep=keep, problems=problems, index=add):
        item = line.entry
        if item["kind"] == "run":
            run = item
        elif item["kind"] == "queued":
            queued = item
        elif item["kind"] == "unqueued":
            queued = None if queued is not None and queued["token"] == item["token"] else queued
        elif item["kind"] == "attempt-start":
            attempts[item["attempt"]] = Attempt(item["attempt"], item, lock=paths.lock)
            placed = item.get("placed")
            if queued is not None and placed is not None and placed.get("token") == queued["token"]:
                queued = None  # the placed attempt began
        elif item["kind"] in ("attempt-end", "stage-start", "stage", "start-point"):
            _add_to(attempts, item)
    if run is None:
        raise RecordError(paths.log, "has no 'run' line: it is not the log of a run")
    return History(run, [attempts[n] for n in sorted(attempts)], queued, paths.log, index, handle, span.end)


class _Span:
    """Complete lines of a log, passed on one at a time, minding where the last one ended."""

    def __init__(self, lines: Iterator[tuple[int, bytes]]) -> None:
        self._lines = lines
        self.end = 0

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        for offset, raw in self._lines:
            self.end = offset + len(raw)
            yield offset, raw


def _of_open_attempts(log: Path, lines: Iterable[tuple[int, bytes]]) -> Callable[[bytes], bool]:
    """Which raw lines to read: all but the stage lines of attempts that have an ending."""
    ended = {
        line.entry["attempt"]
        for line in parse_lines(log, lines, kinds=frozenset({"attempt-end"}))
        if line.entry["kind"] == "attempt-end"
    }

    def of_open_attempt(raw: bytes) -> bool:
        head = _STAGE_LINE.match(raw)
        return head is None or int(head.group(1)) not in ended

    return of_open_attempt


def _add_to(
    attempts: dict[int, Attempt],
    item: entries.AttemptEndLine | entries.StageStartLine | entries.StageLine | entries.StartPointLine,
) -> None:
    """An attempt's ending, stage or start point, as its line in the log says."""
    attempt = attempts.get(item["attempt"])
    if attempt is None:
        return
    if item["kind"] == "attempt-end":
        attempt.end = item
    elif item["kind"] == "stage-start":
        attempt.stages_started.append(sys.intern(item["stage"]))  # one string a stage, both lists
    elif item["kind"] == "stage":
        attempt.stages_recorded.append(sys.intern(item["stage"]))
    else:
        attempt.start_point = item


class AttemptClaim:
    """The lock an attempt holds for its life. Its descriptor is not inherited by children, so
    an agent left running after a crash cannot keep the run looking alive."""

    def __init__(self, paths: RunPaths) -> None:
        from filelock import FileLock, Timeout

        self.paths = paths
        self._lock = FileLock(str(paths.lock), timeout=0, mode=0o600)
        try:
            take(self._lock, paths.lock)
        except Timeout:
            raise Refused(_holder_text(paths)) from None

    def release(self) -> None:
        self._lock.release()


def holder(paths: RunPaths) -> file_kinds.AttemptPid | None:
    """The live attempt's attempt.pid, when the process it names still runs."""
    try:
        pid = cast(file_kinds.AttemptPid, read_json_file(paths.pid, "attempt-pid"))  # its schema checked it
    except (FileNotFoundError, RecordError):
        return None
    return pid if is_alive(pid["pid"], pid.get("process_start")) else None


# How long a refused claim waits for the holder to write its pid: it writes it as soon as it
# has read the run's history, so only a starting attempt on a loaded machine takes this long.
HOLDER_WAIT = 3.0


def _holder_text(paths: RunPaths) -> str:
    import time

    waited_until = time.monotonic() + HOLDER_WAIT
    while True:
        elsewhere = _holder_elsewhere(paths)
        if elsewhere is not None:
            return elsewhere
        held = holder(paths)
        if held is not None:
            return (
                f"run {paths.name} is taken by attempt {held['attempt']} (pid {held['pid']}), still running; "
                f"wait for it to end, or stop it (kill {held['pid']})"
            )
        if time.monotonic() > waited_until:
            return (
                f"run {paths.name} is taken by an attempt that is still starting (its pid is not written yet), "
                "or by an awf run --plan; try again in a moment"
            )
        time.sleep(0.05)


def _holder_elsewhere(paths: RunPaths) -> str | None:
    """The refusal naming the host that holds the lock, when attempt.pid was written on another
    boot (another machine, or this one before a reboot): its pid means nothing here."""
    try:
        pid = read_json_file(paths.pid, "attempt-pid")
    except (FileNotFoundError, RecordError):
        return None
    start = pid.get("process_start")
    if start is None or start.startswith(this_boot() + ":"):
        return None
    host = pid.get("host") or "another machine"
    return (
        f"run {paths.name} is taken by attempt {pid['attempt']} on host {host} (pid {pid['pid']} there), "
        f"still running; wait for it to end, or stop it on {host}"
    )


def existing_id_like(paths: RunPaths) -> str | None:
    """An existing run id of the same workflow equal to this one, ignoring case."""
    try:
        names = os.listdir(paths.workflow_dir)
    except FileNotFoundError:
        return None
    wanted = paths.id.casefold()
    for name in names:
        if name.casefold() == wanted and (paths.workflow_dir / name / "run.jsonl").exists():
            return name
    return None


def refuse_if_taken(paths: RunPaths, *, locked: bool = True) -> None:
    """Refuse a new run on an id that exists, or that differs from one only in case.

    Unless the caller holds the workflow's new-run lock (`locked`), the check takes it, so a run
    being made now is seen whole, with the pid of its first attempt.
    """
    if not locked and paths.workflow_dir.is_dir():
        with holding(paths.workflow_dir / ".new-run.lock"):
            refuse_if_taken(paths)
        return
    if paths.dir.is_symlink():
        raise Refused(
            f"{paths.dir} is a symbolic link, where run {paths.name} keeps its folder, and awf follows no link "
            "in a run's folder; remove the link, or pick another id"
        )
    same = existing_id_like(paths)
    if same is None and not paths.dir.exists():
        return
    if same is not None and same != paths.id:
        held = holder(RunPaths(paths.root, paths.workflow, same))
        if held is not None:
            raise Refused(
                f"run {paths.workflow}/{same} exists, and ids that differ only in case are one run; "
                f"attempt {held['attempt']} (pid {held['pid']}) is running it now; "
                f"pick another id, or wait for it to end and continue it with --id {same} --continue"
            )
        raise Refused(
            f"run {paths.workflow}/{same} exists, and ids that differ only in case are one run; "
            f"pick another id, or continue it with --id {same} --continue"
        )
    held = holder(paths)
    if held is not None:
        raise Refused(
            f"run {paths.name} exists, and attempt {held['attempt']} (pid {held['pid']}) is running it now; "
            f"pick another id, or wait for it to end and continue it with --id {paths.id} --continue"
        )
    raise Refused(f"run {paths.name} exists; continue it with --id {paths.id} --continue, or pick another id")


def create_run(
    paths: RunPaths, run_fields: entries.RunFields, before: Callable[[], None] | None = None
) -> AttemptClaim:
    """Make a new run's folder and claim it for its first attempt, or refuse.

    The folder is made under a temp name beside where it goes, claimed, given its `run` line,
    and renamed into place once that line is on the disk: a crash on the way leaves no folder
    under the run's id, so the same command starts the run again. A lock on the workflow's
    folder makes the check of the id and the creation one step, so two new runs on one id (or
    ids differing in case) cannot both go on. `before` runs once the id is found free, before
    anything is made: what may still refuse the run (the lock of the folder it works in).
    """
    prepare_root(paths.root)
    ensure_dir(paths.workflow_dir)
    with holding(paths.workflow_dir / ".new-run.lock"):
        refuse_if_taken(paths)
        if before is not None:
            before()
        _remove_half_made_runs(paths)
        making = RunPaths(paths.root, paths.workflow, temp_name(paths.id))
        try:
            making.dir.mkdir(mode=0o700)
        except OSError as error:
            raise write_failed(making.dir, error) from None
        claim = AttemptClaim(making)
        try:
            # Before the lock is let go: a new run refused on this id names this attempt and its pid.
            write_pid(making, 1)
            ensure_dir(making.stages)
            entries.append(making.log, entries.run(**run_fields))
            fsync_dir(making.dir)
            try:
                os.rename(making.dir, paths.dir)
            except OSError as error:
                raise write_failed(paths.dir, error) from None
            fsync_dir(paths.workflow_dir)
        except BaseException:
            claim.release()
            shutil.rmtree(making.dir, ignore_errors=True)
            raise
    claim.paths = paths  # the lock is held on the file, which moved with its folder
    return claim


def create_fork(
    paths: RunPaths,
    run_fields: entries.RunFields,
    records: list[file_kinds.StageRecord],
    before: Callable[[], None] | None = None,
) -> None:
    """Make a forked run's folder whole, with no attempt yet: its `run` line, then each copied
    record's file and its `stage` line (so the copy reads as recorded, not as edited by hand).

    As a new run is made: under a temp name beside where it goes, renamed into place once
    everything is on the disk, under the workflow's new-run lock, so a crash leaves no run under
    the id and two forks or runs on one id cannot both be made. `before` runs once the id is
    found free, before anything is made.
    """
    prepare_root(paths.root)
    ensure_dir(paths.workflow_dir)
    with holding(paths.workflow_dir / ".new-run.lock"):
        refuse_if_taken(paths)
        if before is not None:
            before()
        _remove_half_made_runs(paths)
        making = RunPaths(paths.root, paths.workflow, temp_name(paths.id))
        try:
            making.dir.mkdir(mode=0o700)
        except OSError as error:
            raise write_failed(making.dir, error) from None
        try:
            ensure_dir(making.stages)
            entries.append(making.log, entries.run(**run_fields))
            for record in records:
                file = making.stage(record["stage"])
                check("stage", record, file)
                write_json(file, record)
                entries.append(
                    making.log, entries.stage(attempt=record["attempt"], stage=record["stage"], record=record)
                )
            fsync_dir(making.stages)
            fsync_dir(making.dir)
            try:
                os.rename(making.dir, paths.dir)
            except OSError as error:
                raise write_failed(paths.dir, error) from None
            fsync_dir(paths.workflow_dir)
        except BaseException:
            shutil.rmtree(making.dir, ignore_errors=True)
            raise


def _remove_half_made_runs(paths: RunPaths) -> None:
    """Remove the temp folders of new runs whose maker is gone: they hold nothing but a `run` line
    that never became a run. A maker still at work holds its folder's lock."""
    from filelock import FileLock, Timeout

    try:
        names = [name for name in os.listdir(paths.workflow_dir) if is_temp_name(name)]
    except OSError:
        return
    for name in names:
        folder = paths.workflow_dir / name
        lock = FileLock(str(folder / "attempt.lock"), timeout=0, mode=0o600)
        try:
            lock.acquire()
        except Timeout:
            continue
        except OSError:
            pass  # no lock file: made and never claimed
        else:
            lock.release()
        shutil.rmtree(folder, ignore_errors=True)


def claim_existing(paths: RunPaths) -> AttemptClaim:
    """Claim a run that exists for a new attempt, or refuse naming the attempt that holds it.

    It changes no file: a continue that is then refused, or only previews, leaves the run as it
    found it. One that goes on clears what a crash left first (`clear_leftovers`).
    """
    refuse_links(paths)
    return AttemptClaim(paths)


def clear_leftovers(paths: RunPaths) -> None:
    """What a crash can leave, cleared by the attempt that holds the claim, before it writes: a
    half line at the end of the log is set aside before anything is appended, temp files of
    writes that never finished are removed, and so is an `attempt.pid` no live attempt wrote."""
    set_torn_tail_aside(paths.log, entries.torn(note="the end of a line a crash cut short"))
    for folder in (paths.dir, paths.stages):
        remove_temp_files(folder)
    remove_pid(paths)  # the lock is ours, so the attempt that wrote it is over


# The files and folders of a run that awf writes; none may be a symbolic link.
_RECORD_NAMES = ("run.jsonl", "stages", "out.json", "attempt.pid", "attempt.lock")


def refuse_links(paths: RunPaths) -> None:
    """A RecordError for a symbolic link planted where a file or folder of the record goes: awf
    would read or write through it, anywhere. The run's folder itself first: a link there would
    have every write go elsewhere, and the folder syncs that refuse links fail on it."""
    for path in (paths.dir, *(paths.dir / name for name in _RECORD_NAMES)):
        if path.is_symlink():
            raise RecordError(
                path,
                "is a symbolic link, and awf follows no link in a run's folder",
                f"put the {'folder' if path in (paths.dir, paths.stages) else 'file'} itself there, or remove the link",
            )


def write_pid(paths: RunPaths, attempt: int) -> file_kinds.AttemptPid:
    pid = os.getpid()
    data = file_kinds.attempt_pid(attempt=attempt, pid=pid, process_start=process_start(pid), host=socket.gethostname())
    write_json(paths.pid, data)
    return data


def remove_pid(paths: RunPaths) -> None:
    """The pid file describes only a live attempt; the log keeps the pid for good."""
    try:
        paths.pid.unlink()
    except OSError:
        pass  # gone already; or left, to be removed by the next attempt


def read_stage_records(paths: RunPaths) -> StageRecords:
    """The current record of each stage, or the error that keeps it from being read."""
    records: StageRecords = {}
    try:
        names = sorted(os.listdir(paths.stages))
    except FileNotFoundError:
        return records
    except OSError as error:
        problem = "is a file, not a folder" if error.errno == errno.ENOTDIR else unreadable(error)
        raise RecordError(paths.stages, problem, "put the folder of stage records back, or move this away") from None
    folder = os.fspath(paths.stages)  # a string: making a Path for each record costs more than reading it
    for name in names:
        if not name.endswith(".json") or is_temp_name(name):
            continue
        stage = name.removesuffix(".json")
        path = f"{folder}/{name}"
        try:
            record = cast(StageRecord, read_json_file(path, "stage"))  # its schema checked it
            if record["stage"] != stage:
                raise RecordError(path, f"records stage {record['stage']!r}, but its file is named for {stage!r}")
            records[stage] = record
        except RecordError as error:
            records[stage] = error
        except FileNotFoundError:
            continue
    # In the order they were recorded, as a person reads a run: the order of their last `stage`
    # lines in run.jsonl, never a clock, which two stages ending in one millisecond share. A
    # record the log lacks (a crash came between its file and its line) is the newest; an
    # unreadable one comes last.
    order = _recorded_order(paths) if len(records) > 1 else {}
    unlogged = len(order)

    def place(item: tuple[str, StageRecord | RecordError]) -> tuple[int, int]:
        name, record = item
        return (1 if isinstance(record, RecordError) else 0, order.get(name, unlogged))

    return dict(sorted(records.items(), key=place))  # a stable sort: ties stay in name order


# The head of a `stage` line as awf writes it, up to the stage's name (names need no escaping).
_STAGE_NAME = re.compile(
    rb'\{"version": \d+, "kind": "stage", "at": "[^"]*", "attempt": \d+, "stage": "([a-z0-9._@-]+)"'
)


def _recorded_order(paths: RunPaths) -> dict[str, int]:
    """Each stage's place among the stage lines of the log, by its last line; empty when the log
    cannot be read (its reader says why elsewhere)."""
    order: dict[str, int] = {}
    try:
        for _, raw in raw_lines(paths.log):
            match = _STAGE_NAME.match(raw)
            if match is not None:
                name = match.group(1).decode()
                order.pop(name, None)
                order[name] = 0
    except (OSError, RecordError):
        return {}
    return {name: place for place, name in enumerate(order)}


def write_stage_record(paths: RunPaths, record: file_kinds.StageRecord) -> None:
    """The current record first, durable (its rename synced in stages/), then the history: a
    crash between them leaves a current record the log lacks, which a reader can still see, and
    never a `stage` line whose file a power cut took back."""
    check("stage", record, paths.stage(record["stage"]))
    write_json(paths.stage(record["stage"]), record, sync_dir=True)
    entries.append(paths.log, entries.stage(attempt=record["attempt"], stage=record["stage"], record=record))


def set_stage_value(paths: RunPaths, record: file_kinds.StageRecord, line: entries.EditedLine) -> None:
    """A stage's record with a value set by hand (awf set): the file first, durable, then its
    `edited` line, as a stage's record and its line are written. The caller holds the run's claim."""
    check("stage", record, paths.stage(record["stage"]))
    write_json(paths.stage(record["stage"]), record, sync_dir=True)
    entries.append(paths.log, line)


def invalidate(paths: RunPaths, stages: Iterable[str], attempt: int, start: str) -> list[str]:
    """Make stage records no longer current. Their contents stand in run.jsonl already.

    The files go first and the folder is synced before the log says so: a crash in between
    leaves a stage to redo, which is safe, and never a stale record to reuse.
    """
    gone = []
    for stage in stages:
        try:
            paths.stage(stage).unlink()
            gone.append(stage)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise write_failed(paths.stage(stage), error) from None
    if gone:
        fsync_dir(paths.stages)
        entries.append(paths.log, entries.invalidated(attempt=attempt, stages=gone, start=start))
    return gone


def write_report(paths: RunPaths, text: str | None) -> None:
    """The workflow's report as report.md, written whole; None removes the last attempt's (its text
    stays in run.jsonl)."""
    if text is not None:
        write_atomic(paths.report, text if text.endswith("\n") else text + "\n")
        return
    try:
        paths.report.unlink()
    except FileNotFoundError:
        return
    fsync_dir(paths.dir)


def write_out(paths: RunPaths, out: file_kinds.OutRecord) -> str:
    """out.json, durable before the `attempt-end` line that follows it; returns its text, which
    `awf run` prints as it is (a continue of thousands of stages need not encode them twice)."""
    check("out", out, paths.out)
    return write_json_lines(paths.out, dict(out), sync_dir=True)
