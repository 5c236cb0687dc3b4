"""A text cut to one line, for the rows and blocks that show it beside others."""

from __future__ import annotations


def first_line(text: str | None) -> str:
    """A text cut to its first line, with ` …` when there was more: one line a row, wherever it
    is shown beside others. The whole text stays in `awf logs` and out.json."""
    lines = (text or "").strip().splitlines()
    return lines[0] + (" …" if len(lines) > 1 else "") if lines else ""
