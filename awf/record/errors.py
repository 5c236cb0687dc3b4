"""Errors of the record: each names the file and what is wrong with it."""

from __future__ import annotations

from pathlib import Path


class RecordError(Exception):
    """A file of a run's record that cannot be read, does not parse or does not fit its schema."""

    def __init__(self, path: Path | str, problem: str, hint: str | None = None) -> None:
        self.path = Path(path)
        self.problem = problem
        self.hint = hint
        text = f"{self.path}: {problem}"
        if hint:
            text += f"\n  {hint}"
        super().__init__(text)
