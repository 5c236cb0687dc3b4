"""What a run has waiting, read off its files: events no wait has taken yet, whether wakes have
given up on it as crash-looping, and when a stop worth retrying is retried."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .clock import parse_iso
from .file_kinds import RetryFields
from .inbox import read_events
from .layout import RunPaths

if TYPE_CHECKING:
    from .folder import History

GIVE_UP_AFTER = 5  # interrupted attempts in a row, after which no wake restarts the run by itself


def taken_ids(entries: Iterable[Mapping[str, Any]]) -> set[str]:
    """The events the `take` and `race` lines of run.jsonl say were taken."""
    taken = set()
    for entry in entries:
        if entry.get("kind") in ("take", "race") and entry.get("event"):
            taken.add(entry["event"])
    return taken


def queued(paths: RunPaths, taken: set[str]) -> int:
    """How many events in the run's inbox no wait has taken."""
    return sum(1 for event in read_events(paths) if event.id not in taken)


def crash_looping(interrupted_in_a_row: int) -> int | None:
    return interrupted_in_a_row if interrupted_in_a_row >= GIVE_UP_AFTER else None


def crash_loop_text(name: str, count: int) -> str:
    return f"crash-looping: {count} interrupted attempts; awf wake {name} to try again"


def retry_time(retry: RetryFields) -> str:
    """When a retry is due: the time of day, to the second for one minutes away, with the date
    when it is not today's."""
    due = datetime.fromtimestamp(parse_iso(retry["at"]))
    text = due.strftime("%H:%M:%S" if retry["after"] < 600 else "%H:%M")
    return text if due.date() == datetime.now().date() else f"{due:%Y-%m-%d} {text}"


def retry_text(retry: RetryFields) -> str:
    """`retries at 14:05 (2 of 5)`, as `awf runs` and the closing block say it."""
    return f"retries at {retry_time(retry)} ({retry['number']} of {retry['of']})"


def retries_withdrawn(history: History) -> set[int]:
    """The attempts whose retry `awf cancel` withdrew."""
    if not history.has("cancel"):
        return set()
    return {
        line.entry["attempt"]
        for line in history.lines(frozenset({"cancel"}))
        if line.entry["kind"] == "cancel" and line.entry.get("retry") is True
    }


def pending_retry(history: History) -> RetryFields | None:
    """The retry the run's last attempt stopped with, unless `awf cancel` withdrew it."""
    last = history.last
    if last is None or last.end is None or "retry" not in last.end:
        return None
    if last.number in retries_withdrawn(history):
        return None
    retry: RetryFields = last.end["retry"]
    return retry
