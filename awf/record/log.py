"""run.jsonl: the run's history, appended one JSON object a line and never rewritten."""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from . import entries
from .errors import RecordError
from .files import NO_FOLLOW, write_failed
from .schemas import check


@dataclass(frozen=True)
class Line:
    """One entry of the log and the byte offset it starts at (its cursor)."""

    offset: int
    entry: entries.Entry

    @property
    def kind(self) -> str:
        return str(self.entry["kind"])


# awf writes every line with json.dumps's separators, so its kind reads off the bytes.
_KIND = re.compile(rb'^\{"version": \d+, "kind": "([a-z-]+)"')
# Read in large blocks: a log is read start to end, and a line is seldom longer than this.
_BUFFER = 1 << 20


def kind_of(raw: bytes) -> str | None:
    """The kind of a line as awf writes it, off its bytes; None for a line in another form."""
    plain = _KIND.match(raw)
    return plain.group(1).decode() if plain is not None else None


def open_log(path: Path | str) -> BinaryIO:
    """The log open for reading; FileNotFoundError, or a RecordError when it is not a plain file."""
    try:
        fd = os.open(path, os.O_RDONLY | NO_FOLLOW)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise RecordError(path, unreadable(error)) from None
    try:
        return open(fd, "rb", buffering=_BUFFER)
    except OSError as error:  # a folder opens, and is refused here
        os.close(fd)
        raise RecordError(path, unreadable(error)) from None


def lines_of(
    handle: BinaryIO, path: Path | str, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, bytes]]:
    """Each complete line of an open log from byte `start` on (up to byte `stop`), with the offset
    it starts at. One line is held at a time: a log of any length reads in the memory of its
    longest line. A last line with no newline is a write a crash cut short, or one still being
    written: it ends the lines."""
    offset = start
    try:
        handle.seek(start)
        for raw in handle:
            if not raw.endswith(b"\n") or (stop is not None and offset + len(raw) > stop):
                return
            yield offset, raw
            offset += len(raw)
    except OSError as error:
        raise RecordError(path, unreadable(error)) from None


def lines_at(handle: BinaryIO, path: Path | str, offsets: Iterable[int]) -> Iterator[tuple[int, bytes]]:
    """The lines of an open log that start at `offsets` (each the start of a complete line)."""
    try:
        for offset in offsets:
            handle.seek(offset)
            yield offset, handle.readline()
    except OSError as error:
        raise RecordError(path, unreadable(error)) from None


def raw_lines(path: Path | str, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Each complete line of the log at `path`, as lines_of gives them."""
    with open_log(path) as handle:
        yield from lines_of(handle, path, start, stop)


def read_lines(
    path: Path,
    *,
    start: int = 0,
    stop: int | None = None,
    validate: bool = True,
    kinds: frozenset[str] | None = None,
    keep: Callable[[bytes], bool] | None = None,
    problems: list[RecordError] | None = None,
) -> Iterator[Line]:
    """The entries of `path` from byte `start` on (up to byte `stop`; only those of `kinds`, when
    given), read a line at a time.

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
        path, raw_lines(path, start, stop), validate=validate, kinds=kinds, keep=keep, problems=problems
    )


def parse_lines(
    path: Path,
    raws: Iterable[tuple[int, bytes]],
    *,
    validate: bool = True,
    kinds: frozenset[str] | None = None,
    keep: Callable[[bytes], bool] | None = None,
    problems: list[RecordError] | None = None,
    index: Callable[[str, int], None] | None = None,
) -> Iterator[Line]:
    """The entries of `raws`, complete lines of the log at `path` with their offsets, as read_lines
    gives them. Given `index`, it is told the kind and offset of every line passed, read or not."""
    last_at = ""
    for line_offset, raw in raws:
        if not raw.strip():
            continue
        plain = kind_of(raw) if kinds is not None or index is not None else None
        if index is not None and plain is not None:
            index(plain, line_offset)
        if kinds is not None and plain is not None and plain not in kinds:
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
        if index is not None and plain is None and isinstance(entry, dict) and isinstance(entry.get("kind"), str):
            index(entry["kind"], line_offset)
        if validate:
            try:
                check("log-entry", entry, path, where)
            except RecordError as problem:
                if problems is None:
                    raise
                problems.append(problem)
                continue
        # Checked against the log's schema, which keys each kind to its shape in entries; a reader
        # that asks for no check (validate=False) reads only keys it checks itself.
        yield Line(line_offset, cast(entries.Entry, entry))


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


def set_aside(raw: bytes, at: str) -> entries.TornLine:
    """The `torn` entry a reader shows for a line that is not JSON (`at`: the line before's)."""
    return entries.torn(
        at=at,
        note="a line that is not JSON, passed over: a write a crash or a full disk cut short",
        text=raw.decode("utf-8", "replace").rstrip("\n"),
    )


def read_entries(path: Path) -> list[entries.Entry]:
    """Every complete entry of the log, in a list: for a log known to be short."""
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
