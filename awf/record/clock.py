"""Times as the record writes them: ISO 8601 in local time with its offset."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

# The local offset at a time, by its seconds: datetime.astimezone() makes a new timezone at each
# call, and awf writes a time at every stage.
_ZONES: dict[int, timezone] = {}


def now_iso() -> str:
    return iso(time.time())


def iso(seconds: float) -> str:
    offset = time.localtime(seconds).tm_gmtoff  # at that time: it changes with daylight saving
    zone = _ZONES.get(offset)
    if zone is None:
        zone = _ZONES[offset] = timezone(timedelta(seconds=offset))
    return datetime.fromtimestamp(seconds, zone).isoformat(timespec="milliseconds")


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
