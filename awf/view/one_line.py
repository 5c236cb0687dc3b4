"""A text cut to one line, for the rows and blocks that show it beside others."""

from __future__ import annotations

from typing import Any


def first_line(text: str | None) -> str:
    """A text cut to its first line, with ` …` when there was more: one line a row, wherever it
    is shown beside others. The whole text stays in `awf logs` and out.json."""
    lines = (text or "").strip().splitlines()
    return lines[0] + (" …" if len(lines) > 1 else "") if lines else ""


def recorded_by(record: dict[str, Any]) -> str:
    """Who wrote a record, in a `↺` line: `attempt 2`, or `pipeline/p1 attempt 2` for one a fork copied."""
    forked = record.get("forked_from")
    attempt = record.get("attempt", "?")
    return f"{forked.get('run')} attempt {attempt}" if isinstance(forked, dict) else f"attempt {attempt}"
