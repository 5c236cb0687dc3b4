"""What a turn comes to: its outcome, and the turn as the workflow gets it back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ANSWERED = "answered"
UNANSWERED = "unanswered"
BLOCKED = "blocked"
TIMED_OUT = "timed-out"
FAILED = "failed"
CANCELLED = "cancelled"
KINDS = (ANSWERED, UNANSWERED, BLOCKED, TIMED_OUT, FAILED, CANCELLED)


@dataclass(frozen=True)
class Outcome:
    """answered, with `value` checked against the turn's schema; or one of unanswered, blocked,
    timed-out, failed, cancelled, with `reason`. Never an answer that is missing or half read."""

    kind: str
    value: Any = None
    reason: str | None = None

    @property
    def answered(self) -> bool:
        return self.kind == ANSWERED

    def __str__(self) -> str:
        return self.kind if self.answered or not self.reason else f"{self.kind}: {self.reason}"


@dataclass(frozen=True)
class Turn:
    """One prompt to an agent and what came of it: `turn.outcome`."""

    agent: str
    number: int
    prompt: str
    outcome: Outcome
    label: str | None = None
    started: str | None = None
    ended: str | None = None
    seconds: float = 0.0
    session: str | None = None
    usage: dict[str, Any] | None = field(default=None)
    cost: float | None = None

    @property
    def answered(self) -> bool:
        return self.outcome.answered

    @property
    def value(self) -> Any:
        return self.outcome.value
