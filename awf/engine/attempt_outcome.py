"""How an attempt ends (its outcome), and the exit code of each (the Runs page's table)."""

from __future__ import annotations

COMPLETED = "completed"
PARKED = "parked"
STOPPED = "stopped"
FAILED = "failed"
TIMED_OUT = "timed-out"
CANCELLED = "cancelled"


# The Runs page's table; a cancelled attempt exits 128 plus the signal that ended it.
EXIT_CODES = {COMPLETED: 0, PARKED: 0, FAILED: 1, TIMED_OUT: 1, STOPPED: 3}


def exit_code(outcome: str, signal_number: int | None = None) -> int:
    if outcome == CANCELLED:
        return 128 + (signal_number or 2)
    return EXIT_CODES[outcome]
