"""What the agents need of the attempt they work in: the Host the engine makes, and the
protocols of the progress they report and the schemas their turns are checked against."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..record.schemas import JsonSchema


class Progress(Protocol):
    """What the agents tell whoever shows the attempt's progress (the engine's Observer)."""

    def agent_turn_started(
        self, stage: str | None, agent: str, harness: str, turn: int, label: str
    ) -> Mapping[str, str] | None:
        """The turn starts; what it returns is added to the environment of the agent's processes
        (a tracer's TRACEPARENT, so a CLI that exports its own spans nests them under the turn)."""

    def agent_turn_nudged(self, stage: str | None, agent: str, why: str) -> None: ...

    def agent_turn_waiting(self, stage: str | None, agent: str, why: str) -> None: ...

    def agent_turn_ended(
        self, stage: str | None, agent: str, outcome: str, reason: str | None, seconds: float
    ) -> None: ...


class TurnSchema(Protocol):
    """A turn's `schema=` as the engine loads it (a JSON Schema dict, a .json file, a Python type)."""

    @property
    def schema(self) -> JsonSchema:
        """The JSON Schema the agent is shown and its answer is checked against."""
        ...

    def load(self, plain: Any) -> tuple[Any, str | None]:
        """The value the workflow gets for the answer `plain` (for a type, an instance), or why it does not fit."""
        ...


@dataclass
class Host:
    """What the agents need of the attempt they work in. The engine makes it."""

    run: str  # {workflow}/{id}
    run_dir: Path
    attempt: int
    cwd: Path
    stage: Callable[[], str | None]  # the stage the workflow is in now
    deadline: float | None  # the attempt's, in wall-clock seconds: it caps every turn's
    load_schema: Callable[[Any, str], TurnSchema]  # a turn's schema=, loaded
    progress: Progress
    cancel_reason: Callable[[], str | None]  # why the attempt is being cancelled, once it is
    timed_out: Callable[[], bool] = lambda: False  # the attempt is cancelled because --timeout passed
    sandbox: Any = None  # the run's sandbox profile (sandbox_profile.Profile), or None
    # Files that run outside every sandbox, which agents must not change: the workflow file and the
    # modules it imported from beside it.
    protected: tuple[str, ...] = ()
    # Before agent KEY's turn N starts (and whether its harness reports cost): raises the engine's
    # stop when the run has cost more than its --max-cost.
    check_budget: Callable[[str, int, bool], None] = lambda agent, turn, reports_cost: None
    # --max-agents: how many turns of each runtime may run at once across the run root, whose
    # `.slots` holds the lock of each.
    agent_limits: dict[str, int] = field(default_factory=dict)
    run_root: Path | None = None

    @property
    def log(self) -> Path:
        return self.run_dir / "run.jsonl"
