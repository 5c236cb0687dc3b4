"""Stops worth retrying: when the next retry is due, how many came before it in a row, and
whether a person withdrew it.

`wf.stop(reason, retry_after=60)` (or `raise awf.Retry(reason, after=60)`) ends the attempt
stopped, and its attempt-end line says when awf serve (or `awf wake`) continues the run: the
delay doubles with each retry in a row (60, 120, 240 s, ...) and, past `retries` in a row, the
attempt stops for good, saying so. A retry in a row is an attempt that ended stopped with a retry
due; interrupted attempts between them are passed over (wakes count those apart), and any other
ending, or a retry `awf cancel` withdrew, starts the count again.
"""

from __future__ import annotations

from ...record import folder
from ...record.clock import iso
from ...record.file_kinds import RetryFields
from ...record.waiting import retries_withdrawn
from ..errors import Stop


def in_a_row(history: folder.History) -> int:
    """How many of the run's last attempts stopped with a retry due, counting back from the last."""
    count = 0
    gone: set[int] | None = None
    for attempt in reversed(history.attempts):
        if attempt.end is None:
            continue  # interrupted: the crash loop of wakes counts these
        if "retry" not in attempt.end:
            break
        gone = retries_withdrawn(history) if gone is None else gone
        if attempt.number in gone:
            break
        count += 1
    return count


def schedule(stop: Stop, history: folder.History | None, now: float) -> tuple[RetryFields | None, int]:
    """The retry of an attempt that ends with `stop`, or None when it has had its `retries` in a
    row; and how many came before it in a row."""
    assert stop.retry_after is not None
    before = in_a_row(history) if history is not None else 0
    number = before + 1
    if number > stop.retries:
        return None, before
    after = stop.retry_after * 2 ** (number - 1)
    return {"number": number, "of": stop.retries, "after": after, "at": iso(now + after)}, before
