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


def format_duration(seconds: float) -> str:
    """A short reading of a duration: 850ms, 12.3s, 4m05s, 2h10m, 3d4h."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h"
