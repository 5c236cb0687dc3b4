"""How an attempt ends (its outcome), and the exit code of each (the Runs page's table)."""

from __future__ import annotations

COMPLETED = "completed"
PARKED = "parked"
STOPPED = "stopped"
FAILED = "failed"
TIMED_OUT = "timed-out"
CANCELLED = "cancelled"


def exit_code(outcome: str, signal_number: int | None = None) -> int:
    if outcome in (COMPLETED, PARKED):
        return 0
    if outcome == STOPPED:
        return 3
    if outcome == CANCELLED:
        return 128 + (signal_number or 2)
    return 1
