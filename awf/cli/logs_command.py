"""`awf logs`: a run's history from run.jsonl, and the events sent to it, as readable lines, each with its cursor."""

from __future__ import annotations

import json
import sys
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..record.errors import RecordError
from ..record.folder import Attempt, History, read_history
from ..record.layout import RunPaths
from ..record.log import Line, read_lines
from ..record.summary import RunSummary, summarize
from . import output
from .errors import ExitCode, Problem
from .run_target import TargetError, Where, find_run

if TYPE_CHECKING:
    from ..record.entries import TurnLine
    from .logs_sends import Sends

CURSOR_WIDTH = 8


@dataclass
class Filters:
    attempt: int | None = None
    stage: str | None = None
    agent: str | None = None

    def keep(self, entry: Mapping[str, Any]) -> bool:
        if self.attempt is not None and entry.get("attempt") != self.attempt:
            return False
        if self.stage is not None and entry.get("stage") != self.stage:
            return False
        return self.agent is None or entry.get("agent") == self.agent


class Printer:
    """Writes entries as text lines or as JSON lines, as they are read."""

    def __init__(self, json_out: bool) -> None:
        self.json_out = json_out

    def entry(self, line: Line) -> None:
        from ..view.log_text import clock, describe

        text = describe(line.entry)
        if self.json_out:
            self._write(json.dumps({"cursor": line.offset, "text": text, "entry": line.entry}, ensure_ascii=False))
            return
        first, *rest = text.splitlines()
        pad = " " * (CURSOR_WIDTH + 12)
        self._write(
            "\n".join(
                [
                    f"{line.offset:>{CURSOR_WIDTH}}  {clock(line.entry['at'])}  {first}",
                    *(pad + more for more in rest),
                ]
            )
        )

    def send(self, line: Line) -> None:
        """An event sent to the run: a line of its inbox, with a cursor of its own."""
        from ..view.log_text import clock, describe
        from .logs_sends import cursor

        sent: Mapping[str, Any] = line.entry  # a line of the inbox, read by the log's reader
        text = describe(sent)
        if self.json_out:
            self._write(json.dumps({"cursor": cursor(line), "text": text, "event": sent}, ensure_ascii=False))
            return
        self._write(f"{cursor(line):>{CURSOR_WIDTH}}  {clock(sent.get('sent'))}  {text}")

    def interrupted(self, paths: RunPaths, history: History, crashed: Attempt) -> None:
        """An attempt with no ending whose process is gone: say so, with the agents it left
        running, and, for the run's last attempt, how to go on."""
        from ..agents.leftovers import left_running
        from ..record.detail import go_on_command

        where = f" in stage {crashed.open_stage}" if crashed.open_stage else ""
        text = f"attempt {crashed.number} interrupted{where}: its process (pid {crashed.pid}) is gone, with no ending"
        left = left_running(paths.log, [crashed.number])
        text += "".join(
            f"\n  agent {one.agent}{f' in stage {one.stage}' if one.stage else ''} is still running (pid {one.pid}): "
            f"end it with {one.end_command}"
            for one in left
        )
        go_on = go_on_command(history, paths, Path.cwd()) if crashed is history.last else None
        if self.json_out:
            said: dict[str, Any] = {"attempt": crashed.number, "stage": crashed.open_stage, "pid": crashed.pid}
            said["left_running"] = [{"agent": one.agent, "pid": one.pid, "stage": one.stage} for one in left]
            self._write(
                json.dumps({"cursor": None, "text": text, "go_on": go_on, "interrupted": said}, ensure_ascii=False)
            )
            return
        pad = " " * (CURSOR_WIDTH + 12)
        first, *rest = text.splitlines()
        self._write(
            "\n".join([f"{'':>{CURSOR_WIDTH}}  {'':8}  {first}", *(pad + more for more in rest)])
            + (f"\n{pad}go on: {go_on}" if go_on else "")
        )

    def _write(self, text: str) -> None:
        try:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            raise SystemExit(0) from None  # the reader went away (a closed pipe): nothing more to say


def logs_command(  # noqa: PLR0913 — a command's function takes its options one by one, as app.py hands them over
    *,
    target: str,
    attempt: int | None,
    stage: str | None,
    agent: str | None,
    follow: bool,
    after: str | None,
    json_out: bool,
    turn: str | None,
    cwd: Path | None,
    run_root: Path | None,
) -> int:
    paths = find_run(target, Where.of(cwd, run_root))
    if turn is not None:
        return _turn(paths, turn, json_out)
    summary = summarize(paths)
    if summary is None:
        raise TargetError(f"there is no run {paths.name}: its log is gone", Problem.NO_SUCH_RUN)
    if attempt is not None and not 1 <= attempt <= summary.attempts:
        raise TargetError(
            f"run {paths.name} has no attempt {attempt}: it has {_attempts(summary.attempts)}", Problem.NO_SUCH_RUN
        )
    filters = Filters(attempt, stage, agent)
    start, since, sends = _where_to_start(paths, after, filters)
    reading = _Reading(start, after is not None and since is None, since, filters, Printer(json_out), sends)
    if follow and summary.status == "running":
        _follow(paths, summary, reading)
        reading.sends_so_far()
        history = read_history(paths)  # as it is now the attempt followed has ended, or its process
        last = history.last
        crashed: list[Attempt] = []
        if attempt in (None, summary.attempts) and last is not None and last.end is None and not last.is_live():
            crashed = [last]
    else:
        history = read_history(paths)
        crashed = _print_all(paths, history, reading, after is not None)
        reading.sends_so_far()
    for rest in crashed:
        reading.printer.interrupted(paths, history, rest)
    return ExitCode.OK


@dataclass
class _Reading:
    """What awf logs prints, from where: the offset it reads from (that entry skipped with --after
    its cursor), the time entries must be after (--after a send's cursor), the filters, the sends
    to put among the entries, and the printer."""

    start: int
    skip_start: bool
    since: float | None
    filters: Filters
    printer: Printer
    sends: Sends | None

    def skipped(self, line: Line) -> bool:
        return self.skip_start and line.offset == self.start

    def show(self, line: Line) -> None:
        """The entry, if the filters keep it, after the sends that came before it."""
        if _shown(line, self.since, self.filters):
            for sent in self.sends.before(line.entry) if self.sends else []:
                self.printer.send(sent)
            self.printer.entry(line)

    def sends_so_far(self) -> None:
        """The sends not yet printed, read again for those that came meanwhile."""
        if self.sends is not None:
            self.sends.read()
            for sent in self.sends.rest():
                self.printer.send(sent)


def _print_all(paths: RunPaths, history: History, reading: _Reading, after: bool) -> list[Attempt]:
    """Print the entries from the start, each interrupted attempt told where it happened: after its
    attempt's last line, before the next attempt. Returns those left to tell at the end."""
    attempt = reading.filters.attempt
    crashed = [a for a in history.attempts if a.end is None and not a.is_live()]
    if after:
        crashed = crashed[-1:] if crashed and crashed[-1] is history.last else []
    crashed = [a for a in crashed if attempt is None or a.number == attempt]
    for line in read_lines(paths.log, start=reading.start):
        if line.entry["kind"] == "attempt-start":
            while crashed and crashed[0].number < line.entry["attempt"]:
                reading.printer.interrupted(paths, history, crashed.pop(0))
        if not reading.skipped(line):
            reading.show(line)
    return crashed


def _attempts(count: int) -> str:
    return "no attempt" if count == 0 else "attempt 1" if count == 1 else f"attempts 1 to {count}"


def _where_to_start(paths: RunPaths, after: str | None, filters: Filters) -> tuple[int, float | None, Sends | None]:
    """Where in run.jsonl to read from, the time its entries must be after (for --after a send's
    cursor), and the sends to put among them (none when --attempt, --stage or --agent picks)."""
    from .logs_sends import Sends, is_send_cursor, when

    with_sends = filters.attempt is None and filters.stage is None and filters.agent is None
    if after is not None and is_send_cursor(after):
        sent = _send_cursor(paths, after)
        return 0, when(sent.entry) or 0.0, Sends(paths, after_offset=sent.offset) if with_sends else None
    start = _cursor(paths, after) if after is not None else 0
    if not with_sends:
        return start, None, None
    if after is None:
        return start, None, Sends(paths)
    entry = next(iter(read_lines(paths.log, start=start)), None)
    return start, None, Sends(paths, not_before=when(entry.entry) if entry else None)


def _shown(line: Line, since: float | None, filters: Filters) -> bool:
    from .logs_sends import when

    if since is not None and (when(line.entry) or 0.0) <= since:
        return False
    return filters.keep(line.entry)


def _send_cursor(paths: RunPaths, text: str) -> Line:
    """The send a cursor such as `e214` names; anything else does not fit the run (exit 1)."""
    from .logs_sends import send_at

    digits = text[1:]
    found = send_at(paths, int(digits)) if digits.isdigit() else None
    if found is None:
        raise TargetError(
            f"cursor {text!r} does not fit run {paths.name}: a send's cursor is the one awf logs prints before "
            "it, such as e0 (the byte offset it starts at in events.jsonl)",
            Problem.NO_SUCH_RUN,
        )
    return found


def _cursor(paths: RunPaths, text: str) -> int:
    """The byte offset an entry starts at; anything else does not fit the run (exit 1)."""
    problem = TargetError(
        f"cursor {text!r} does not fit run {paths.name}: a cursor is the number awf logs prints before an "
        "entry (the byte offset it starts at in run.jsonl)",
        Problem.NO_SUCH_RUN,
    )
    try:
        cursor = int(text)
    except ValueError:
        raise problem from None
    if cursor < 0:
        raise problem
    try:
        with open(paths.log, "rb") as handle:
            handle.seek(max(cursor - 1, 0))
            around = handle.read(1 + 65536) if cursor else b"\n" + handle.read(65536)
    except OSError as error:
        raise RecordError(paths.log, f"cannot be read: {error.strerror}") from None
    # At a boundary the byte before is a newline, and a whole line starts at the cursor.
    if len(around) < 2 or around[:1] != b"\n" or around[1:2] == b"\n":
        raise problem
    return cursor


def _follow(paths: RunPaths, summary: RunSummary, reading: _Reading) -> None:
    """Print as the run writes, and each event sent to it as it comes, until the attempt that is
    running now ends (or its process does)."""
    from ..view.follow import GONE, Follower

    live = summary.attempts
    with Follower(paths.dir, paths.log, reading.start) as follower:
        follower.watch_process(summary.pid or 0, summary.process_start)
        gone = False
        while True:
            for line in follower.new_lines():
                if reading.skipped(line):
                    continue
                reading.show(line)
                if line.kind == "attempt-end" and line.entry.get("attempt") == live:
                    return
            reading.sends_so_far()
            if gone:
                return  # ended with no ending: the caller says it was interrupted
            gone = follower.wait() == GONE


def _turn(paths: RunPaths, handle: str, json_out: bool) -> int:
    """Each turn the handle names: its prompt and its answer."""
    from ..view.log_text import describe, session_handle, turn_handle

    found: list[tuple[int, TurnLine]] = []
    handles: deque[str] = deque(maxlen=10)  # the last turns, to name when none fits
    for line in read_lines(paths.log, kinds=frozenset({"turn"})):
        turn = line.entry
        if turn["kind"] != "turn":
            continue
        names = {turn_handle(turn), session_handle(turn), turn.get("session")}
        handles.append(turn_handle(turn))
        if handle in names:
            found.append((line.offset, turn))
    if not found:
        known = f"its turns are {', '.join(handles)}" if handles else "it has no turns"
        raise TargetError(f"run {paths.name} has no turn {handle!r}: {known}", Problem.NO_SUCH_RUN)
    for offset, entry in found:
        if json_out:
            output.result(json.dumps({"cursor": offset, "text": describe(entry), "entry": entry}, ensure_ascii=False))
            continue
        answer = entry.get("value") if entry.get("outcome") == "answered" else None
        shown = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False, indent=2)
        lines = [describe(entry), "prompt:", *_indented(entry.get("prompt") or "")]
        if entry.get("outcome") == "answered":
            lines += ["answer:", *_indented(shown)]
        else:
            lines += [f"no answer: {entry.get('outcome')}: {entry.get('reason') or ''}"]
        output.result("\n".join(lines))
    return ExitCode.OK


def _indented(text: str) -> list[str]:
    return ["  " + line for line in str(text).splitlines()] or ["  "]
