"""Durations as people write them: `90s`, `10m`, `2h`, `1h30m`, `1d`, or plain seconds."""

from __future__ import annotations

import re

from ..record.clock import format_duration

__all__ = ["format_duration", "parse_duration"]

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
