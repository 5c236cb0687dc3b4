"""The user's own frames of a traceback: awf's frames are left out of what a person is shown."""

from __future__ import annotations

import traceback
from pathlib import Path

_AWF = str(Path(__file__).resolve().parent.parent) + "/"


def _is_awf(filename: str) -> bool:
    return filename.startswith(_AWF)


def user_traceback(error: BaseException) -> str:
    """The traceback of `error` (and of the errors it was raised from) with awf's frames taken out.

    The whole traceback stays in the record; this is what the person whose code raised it reads.
    """
    shown = traceback.TracebackException.from_exception(error)
    seen: set[int] = set()
    pending = [shown]
    while pending:
        each = pending.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        each.stack = traceback.StackSummary.from_list([frame for frame in each.stack if not _is_awf(frame.filename)])
        pending += [linked for linked in (each.__cause__, each.__context__) if linked is not None]
    text = "".join(shown.format())
    # A traceback with no frame left reads as Python's own with none: only the error.
    return text.replace("Traceback (most recent call last):\n", "") if not shown.stack else text


def line_in(error: BaseException, file: Path) -> int | None:
    """The line of `file` the error came from: the last frame in that file, or a SyntaxError's line."""
    if isinstance(error, SyntaxError) and error.filename and Path(error.filename).resolve() == file:
        return error.lineno
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        if Path(frame.filename).resolve() == file:
            found = frame.lineno
    return found
