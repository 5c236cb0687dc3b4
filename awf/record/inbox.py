"""events.jsonl: a run's inbox of events, appended by `awf send`, taken by `wf.events`.

Each line is one event. Appending holds a lock on the inbox, so an `--event-id` already queued
is never queued twice, even by two sends at once. Events are never removed: a take is recorded
in run.jsonl, and an event once taken is never taken again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .clock import now_iso
from .file_kinds import event_line
from .files import append_line
from .layout import RunPaths
from .locks import holding
from .log import Line, read_lines
from .schemas import check


@dataclass(frozen=True)
class Event:
    """An event sent to a run."""

    id: str
    name: str
    value: Any
    sent: str

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> Event:
        return cls(entry["id"], entry["name"], entry.get("value"), entry["sent"])


def inbox_path(paths: RunPaths) -> Path:
    return paths.dir / "events.jsonl"


def read_events(paths: RunPaths) -> list[Event]:
    """Every event sent to the run, oldest first."""
    return [Event.from_entry(line.entry) for line in read_sends(paths)]


def read_sends(paths: RunPaths, start: int = 0) -> list[Line]:
    """The lines of the run's inbox from byte `start` on, each checked against event.schema.json;
    none when the run has no inbox. A line that does not fit is a RecordError naming the file."""
    path = inbox_path(paths)
    try:
        lines = [line for line in read_lines(path, start=start, validate=False) if not _set_aside(line)]
    except FileNotFoundError:
        return []
    for line in lines:
        check("event", line.entry, path, f"the line at byte {line.offset} ")
    return lines


def _set_aside(line: Line) -> bool:
    """A line that is not JSON: a write a crash or a full disk cut short, passed over as in run.jsonl."""
    return isinstance(line.entry, dict) and line.entry.get("kind") == "torn"


def new_event_id() -> str:
    """Sortable by time, unique enough across machines: nanoseconds in hex and four random bytes."""
    return f"{time.time_ns():x}-{os.urandom(4).hex()}"


def append_event(paths: RunPaths, name: str, value: Any, event_id: str | None) -> tuple[Event, bool]:
    """Queue an event; return it and whether it is new (False: that id was queued before)."""
    with holding(paths.dir / "events.lock"):
        if event_id is not None:
            for queued in read_events(paths):
                if queued.id == event_id:
                    return queued, False
        event = Event(event_id or new_event_id(), name, value, now_iso())
        append_line(
            inbox_path(paths),
            event_line(id=event.id, name=name, value=value, sent=event.sent, pid=os.getpid()),
        )
    return event, True
