"""The events sent to a run, put among the entries of its log in `awf logs` by the time they were sent.

The sends live in the run's inbox (events.jsonl), not in run.jsonl, so their cursors are their
byte offsets in the inbox with an `e` before them (`e0`, `e214`). In time order, an entry of the
log comes before a send made in the same millisecond: `--after` a log entry's cursor shows the
sends made at or after its time, and `--after` a send's cursor the log entries made after it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..record.clock import parse_iso
from ..record.inbox import inbox_path, read_sends
from ..record.layout import RunPaths
from ..record.log import Line

PREFIX = "e"


def is_send_cursor(text: str) -> bool:
    return text.startswith(PREFIX)


def cursor(line: Line) -> str:
    return f"{PREFIX}{line.offset}"


def when(entry: Mapping[str, object]) -> float | None:
    """When an entry of the log was made, or a send was sent; None when it does not say."""
    text = entry.get("sent") if entry.get("kind") == "event" else entry.get("at")
    try:
        return parse_iso(text) if isinstance(text, str) else None
    except ValueError:
        return None


class Sends:
    """The sends still to print, oldest first."""

    def __init__(self, paths: RunPaths, *, after_offset: int = -1, not_before: float | None = None) -> None:
        self.paths = paths
        self.printed: int = after_offset  # the offset of the last send printed (or skipped by --after)
        self.not_before = not_before
        self.waiting: list[Line] = []
        self.read()

    def read(self) -> None:
        """Take in the sends appended since the last read."""
        for line in read_sends(self.paths):
            if line.offset <= self.printed or any(line.offset == known.offset for known in self.waiting):
                continue
            sent = when(line.entry)
            if self.not_before is not None and sent is not None and sent < self.not_before:
                self.printed = line.offset
                continue
            self.waiting.append(line)

    def before(self, entry: Mapping[str, object]) -> list[Line]:
        """The sends made before `entry` of the log, to print ahead of it."""
        at = when(entry)
        if at is None:
            return []
        due = [line for line in self.waiting if (when(line.entry) or 0.0) < at]
        return self._take(due)

    def rest(self) -> list[Line]:
        return self._take(list(self.waiting))

    def _take(self, lines: list[Line]) -> list[Line]:
        for line in lines:
            self.waiting.remove(line)
            self.printed = max(self.printed, line.offset)
        return lines


def send_at(paths: RunPaths, offset: int) -> Line | None:
    """The send whose line starts at `offset` in the inbox, or None when none does."""
    if not inbox_path(paths).exists():
        return None
    return next((line for line in read_sends(paths) if line.offset == offset), None)
