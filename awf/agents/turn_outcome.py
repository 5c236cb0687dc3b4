"""What a turn comes to (its outcome), and the turn as the workflow gets it back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeVar

ANSWERED: Final = "answered"
UNANSWERED = "unanswered"
BLOCKED = "blocked"
TIMED_OUT = "timed-out"
FAILED = "failed"
CANCELLED = "cancelled"
KINDS = (ANSWERED, UNANSWERED, BLOCKED, TIMED_OUT, FAILED, CANCELLED)

T = TypeVar("T", covariant=True)


@dataclass(frozen=True)
class Answered(Generic[T]):
    """The agent answered: `value` fits the turn's schema (for a Python type, an instance of it)."""

    value: T
    kind: Literal["answered"] = ANSWERED
    reason: None = None

    @property
    def answered(self) -> Literal[True]:
        return True

    def __str__(self) -> str:
        return self.kind


@dataclass(frozen=True)
class NotAnswered:
    """unanswered, blocked, timed-out, failed or cancelled, with `reason`; `value` is None."""

    kind: str
    reason: str | None = None
    value: None = None

    @property
    def answered(self) -> Literal[False]:
        return False

    def __str__(self) -> str:
        return f"{self.kind}: {self.reason}" if self.reason else self.kind


# A turn's outcome. `if not turn.outcome.answered: wf.stop(...)` leaves a type checker knowing
# `turn.outcome.value` is the turn's type. Never an answer that is missing or half read.
Outcome = Answered[T] | NotAnswered


@dataclass(frozen=True)
class Turn(Generic[T]):
    """One prompt to an agent and what came of it: `turn.outcome`."""

    agent: str
    number: int
    prompt: str
    outcome: Outcome[T]
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
    def value(self) -> T | None:
        return self.outcome.value
