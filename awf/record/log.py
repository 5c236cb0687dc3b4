"""run.jsonl: the run's history, appended one JSON object a line and never rewritten."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import RecordError
from .files import append_line
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

    A last line with no newline is a write a crash cut short: it is skipped. Any other line that
    does not parse or fit its schema is an error naming the file and the line. With `kinds`, a
    line that plainly is of another kind is passed over unread: a history of many attempts is
    read at each one's start, and most of its lines are of no use there. `keep` does the same
    for the lines (as bytes) it says False of. Given `problems`, a line that does not parse or fit
    is added to it and passed over, so a reader can show the rest.
    """
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            data = handle.read()
    except FileNotFoundError:
        raise
    except OSError as error:
        raise RecordError(path, f"cannot be read: {error.strerror}") from None
    offset = start
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
            if validate:
                check("log-entry", entry, path, where)
        except (json.JSONDecodeError, UnicodeDecodeError, RecordError) as error:
            problem = (
                error
                if isinstance(error, RecordError)
                else RecordError(path, f"{where}is not JSON ({error.msg if hasattr(error, 'msg') else error})")
            )
            if problems is None:
                raise problem from None
            problems.append(problem)
            continue
        yield Line(line_offset, entry)


def read_entries(path: Path) -> list[dict[str, Any]]:
    """Every complete entry of the log."""
    return [line.entry for line in read_lines(path)]


def set_torn_tail_aside(path: Path, torn_entry: dict[str, Any]) -> bool:
    """If a crash left a half-written last line, move its bytes into a `torn` entry.

    The half line cannot be read as JSON, but it is kept, as text, in the entry that replaces it,
    so the next append starts on a line of its own.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if size == 0:
        return False
    with open(path, "rb+") as handle:
        handle.seek(max(0, size - 65536))
        tail = handle.read()
        if tail.endswith(b"\n"):
            return False
        cut = tail.rfind(b"\n")
        torn_start = size - len(tail) + cut + 1
        handle.seek(torn_start)
        torn = handle.read()
        handle.truncate(torn_start)
        handle.flush()
        os.fsync(handle.fileno())
    append_line(path, {**torn_entry, "text": torn.decode("utf-8", "replace")})
    return True
