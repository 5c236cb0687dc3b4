"""Errors of the record: each names the file and what is wrong with it."""

from __future__ import annotations

from pathlib import Path


class RecordError(Exception):
    """A file of a run's record that cannot be read, does not parse or does not fit its schema."""

    def __init__(self, path: Path | str, problem: str, hint: str | None = None) -> None:
        self.path: Path = Path(path)
        self.problem = problem
        self.hint = hint
        text = f"{self.path}: {problem}"
        if hint:
            text += f"\n  {hint}"
        super().__init__(text)


class RecordWriteError(BaseException):
    """A file of a run's record that cannot be written: a full disk, an I/O error, a bad path.

    A BaseException, as wf.stop's Stop is, so a workflow's `except Exception` cannot swallow it
    and go on writing to a record that no longer takes writes.
    """

    def __init__(self, path: Path | str, error: OSError) -> None:
        self.path: Path = Path(path)
        self.errno: int | None = error.errno
        reason = error.strerror or str(error)
        self.reason: str = reason[:1].lower() + reason[1:]
        super().__init__(f"{self.path}: cannot be written: {self.reason}")
