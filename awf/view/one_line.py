"""A text cut to one line, for the rows and blocks that show it beside others."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def first_line(text: str | None) -> str:
    """A text cut to its first line, with ` …` when there was more: one line a row, wherever it
    is shown beside others. The whole text stays in `awf logs` and out.json."""
    lines = (text or "").strip().splitlines()
    return lines[0] + (" …" if len(lines) > 1 else "") if lines else ""


def recorded_by(record: Mapping[str, Any]) -> str:
    """Who wrote a record, in a `↺` line: `attempt 2`, or `pipeline/p1 attempt 2` for one a fork copied."""
    forked = record.get("forked_from")
    attempt = record.get("attempt", "?")
    return f"{forked.get('run')} attempt {attempt}" if isinstance(forked, dict) else f"attempt {attempt}"


def skipped_text(record: Mapping[str, Any] | None) -> str:
    """A stage --skip-stage named, in a `↷` line: whose value it kept, when it kept one.

    `record` is the record the skip wrote (its `value_of` says whose value it kept) or, in a
    preview, the record it would keep the value of."""
    record = record or {}
    of = record.get("value_of") if record.get("origin") == "skipped" else record.get("attempt")
    if of is None or (record.get("origin") == "skipped" and record.get("has_result") is False):
        return "skipped (--skip-stage)"
    return f"skipped (--skip-stage), with the value of attempt {of}"


def status_text(text: str | None, progress: float | None) -> str:
    """A status the workflow set (wf.status), on one line: `waiting for CI (40%)`."""
    shown = first_line(text)
    return f"{shown} ({round(progress * 100)}%)" if isinstance(progress, (int, float)) else shown
