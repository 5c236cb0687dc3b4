"""run.jsonl: the run's history, appended one JSON object a line and never rewritten."""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from . import entries
from .errors import RecordError
from .files import NO_FOLLOW, write_failed
from .schemas import check


@dataclass(frozen=True)
class Line:
    """One entry of the log and the byte offset it starts at (its cursor)."""

    offset: int
    entry: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.entry["kind"])


# awf writes every line with json.dumps's separators, so its kind reads off the bytes.
_KIND = re.compile(rb'^\{"version": \d+, "kind": "([a-z-]+)"')


def read_lines(
    path: Path,
    *,
    start: int = 0,
    validate: bool = True,
    kinds: frozenset[str] | None = None,
    keep: Callable[[bytes], bool] | None = None,
    problems: list[RecordError] | None = None,
) -> Iterator[Line]:
    """The entries of `path` from byte `start` on (only those of `kinds`, when given).

    A last line with no newline is a write a crash cut short: it is skipped. A line that is not
    JSON, wherever it is, is a write a crash or a full disk cut short and that could not be cut
    off: it comes as a `torn` entry of its text (`set_aside`), which every reader passes over as
    it passes over the torn lines a continue wrote. A JSON line that does not fit its schema is
    an error naming the file and the line. With `kinds`, a
    line that plainly is of another kind is passed over unread: a history of many attempts is
    read at each one's start, and most of its lines are of no use there. `keep` does the same
    for the lines (as bytes) it says False of. Given `problems`, a line that does not fit is added
    to it and passed over, so a reader can show the rest.
    """
    yield from parse_lines(
        path, read_log_bytes(path, start), start=start, validate=validate, kinds=kinds, keep=keep, problems=problems
    )


def parse_lines(
    path: Path,
    data: bytes,
    *,
    start: int = 0,
    validate: bool = True,
    kinds: frozenset[str] | None = None,
    keep: Callable[[bytes], bool] | None = None,
    problems: list[RecordError] | None = None,
) -> Iterator[Line]:
    """The entries of `data`, the bytes of the log at `path` from byte `start` on, as read_lines
    gives them: one read of the log can be asked for its lines more than once."""
    offset = start
    last_at = ""
    for raw in data.splitlines(keepends=True):
        line_offset = offset
        offset += len(raw)
        if not raw.endswith(b"\n"):
            return  # torn by a crash mid-write; the next attempt sets it aside
        if not raw.strip():
            continue
        if kinds is not None:
            plain = _KIND.match(raw)
            if plain is not None and plain.group(1).decode() not in kinds:
                continue
        if keep is not None and not keep(raw):
            continue
        where = f"the line at byte {line_offset} "
        try:
            entry = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            if kinds is None or "torn" in kinds:
                yield Line(line_offset, set_aside(raw, last_at))
            continue
        last_at = entry.get("at", last_at) if isinstance(entry, dict) else last_at
        if validate:
            try:
                check("log-entry", entry, path, where)
            except RecordError as problem:
                if problems is None:
                    raise
                problems.append(problem)
                continue
        yield Line(line_offset, entry)


@dataclass(frozen=True)
class LogRead:
    """A log as one read of it found it, asked for its lines of a few kinds at a time."""

    path: Path
    data: bytes

    def lines(self, kinds: frozenset[str], *, validate: bool = True) -> list[Line]:
        """The lines of `kinds`, as read_lines gives them, from this read."""
        return list(parse_lines(self.path, self.data, kinds=kinds, validate=validate))

    def has(self, kind: str) -> bool:
        """Whether the log may hold a line of `kind`: a look at its bytes, never a parse."""
        return f'"{kind}"'.encode() in self.data


def read_log(path: Path) -> LogRead:
    """The whole log, read once; FileNotFoundError or RecordError as read_log_bytes."""
    return LogRead(path, read_log_bytes(path))


def read_log_bytes(path: Path | str, start: int = 0) -> bytes:
    """The bytes of a log from `start` on; a log that is not a plain file is a RecordError."""
    try:
        fd = os.open(path, os.O_RDONLY | NO_FOLLOW)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise RecordError(path, unreadable(error)) from None
    try:
        with open(fd, "rb") as handle:
            handle.seek(start)
            return handle.read()
    except OSError as error:
        raise RecordError(path, unreadable(error)) from None


def unreadable(error: OSError) -> str:
    """Why a file of the record cannot be read, in the words of a person who looks at it."""
    if error.errno == errno.ELOOP:
        return (
            "cannot be read: it is a symbolic link, and awf follows no link in a run's folder; "
            "put the file itself there"
        )
    if error.errno == errno.EISDIR:
        return "cannot be read: it is a folder, not a file"
    return f"cannot be read: {error.strerror}"


def set_aside(raw: bytes, at: str) -> dict[str, Any]:
    """The `torn` entry a reader shows for a line that is not JSON (`at`: the line before's)."""
    torn: dict[str, Any] = {
        **entries.torn(
            at=at,
            note="a line that is not JSON, passed over: a write a crash or a full disk cut short",
            text=raw.decode("utf-8", "replace").rstrip("\n"),
        )
    }
    return torn


def read_entries(path: Path) -> list[dict[str, Any]]:
    """Every complete entry of the log."""
    return [line.entry for line in read_lines(path)]


_BLOCK = 65536


def _start_of_last_line(handle: BinaryIO, size: int) -> int | None:
    """Where the file's unfinished last line starts (0 when it has no newline at all), or None
    when it ends with a newline. Read back a block at a time: a half line can be longer than one."""
    end = size
    while end > 0:
        start = max(0, end - _BLOCK)
        handle.seek(start)
        block = handle.read(end - start)
        if end == size and block.endswith(b"\n"):
            return None
        cut = block.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def set_torn_tail_aside(path: Path, torn_line: entries.TornLine) -> bool:
    """If a crash left a half-written last line, move its bytes into a `torn` entry.

    The half line cannot be read as JSON, but it is kept, as text, in the entry that replaces it,
    so the next append starts on a line of its own.
    """
    try:
        fd = os.open(path, os.O_RDWR | NO_FOLLOW)
    except FileNotFoundError:
        return False
    except OSError as error:
        if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and os.access(path, os.R_OK):
            raise write_failed(path, error) from None  # it reads, and cannot be written
        raise RecordError(path, unreadable(error)) from None
    try:
        with open(fd, "rb+") as handle:
            size = os.fstat(fd).st_size
            if size == 0:
                return False
            torn_start = _start_of_last_line(handle, size)
            if torn_start is None:
                return False
            handle.seek(torn_start)
            torn = handle.read()
            try:
                handle.truncate(torn_start)
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as error:
                raise write_failed(path, error) from None
    except OSError as error:
        raise RecordError(path, unreadable(error)) from None
    entries.append(path, {**torn_line, "text": torn.decode("utf-8", "replace")})
    return True
