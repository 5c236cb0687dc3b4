"""Times as the record writes them: ISO 8601 in local time with its offset."""

from __future__ import annotations

import time
from datetime import datetime


def now_iso() -> str:
    return datetime.now().astimezone().isoformat(timespec="milliseconds")


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="milliseconds")


def parse_iso(text: str) -> float:
    """Seconds since the epoch of a time the record wrote."""
    return datetime.fromisoformat(text).timestamp()


def age(text: str | None, now: float | None = None) -> float | None:
    """Seconds since `text`, or None when it is missing or unreadable."""
    if not text:
        return None
    try:
        return (time.time() if now is None else now) - parse_iso(text)
    except ValueError:
        return None
