"""What a run with events has waiting, read off its files: events no wait has taken yet, and
whether wakes have given up on it as crash-looping."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .inbox import read_events
from .layout import RunPaths

GIVE_UP_AFTER = 5  # interrupted attempts in a row, after which no wake restarts the run by itself


def taken_ids(entries: Iterable[dict[str, Any]]) -> set[str]:
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
