"""Durations as people write them: `90s`, `10m`, `2h`, `1h30m`, `1d`, or plain seconds."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """Seconds in `text`; ValueError with a readable message when it is not a duration."""
    raw = text.strip().replace(" ", "")
    try:
        seconds = float(raw)
    except ValueError:
        parts = _PART.findall(raw)
        if not parts or "".join(number + unit for number, unit in parts) != raw:
            raise ValueError(f"{text!r} is not a duration: write it as 90s, 10m, 2h, 1h30m or 1d") from None
        seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
    if seconds <= 0:
        raise ValueError(f"{text!r} is not a duration: it must be more than zero")
    return seconds


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
