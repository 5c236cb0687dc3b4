"""What the engine tells whoever shows an attempt's progress. The view implements it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from ..record.file_kinds import StageRecord


class Observer(Protocol):
    def attempt_started(self, workflow: str, run_id: str, attempt: int, record_dir: Path) -> None: ...

    def notice(self, text: str) -> None:
        """A line worth a person's attention: a warning, an interrupted attempt, …"""

    def stage_reused(self, name: str, value: Any, record: StageRecord | None, how: str) -> None: ...

    def stage_started(self, name: str, why: str | None) -> None: ...

    def stage_ended(self, record: StageRecord, seconds: float) -> None: ...

    def logged(self, stage: str | None, message: str) -> None: ...

    def status(self, text: str, progress: float | None) -> None:
        """What the workflow says it is doing (wf.status): shown until the next one or the attempt's end."""

    def group_started(self, label: str, branches: int, concurrency: int | None) -> None:
        """A fan-out's branches start: `wf.each`'s that run (each then a stage), or `wf.parallel`'s."""

    def group_ended(self, label: str, tally: str) -> None: ...

    def branch_started(self, label: str, branch: str) -> None:
        """A branch of `wf.parallel`, which is not a stage."""

    def branch_ended(self, label: str, branch: str, outcome: str, reason: str | None, seconds: float) -> None: ...

    def agent_turn_started(
        self, stage: str | None, agent: str, harness: str, turn: int, label: str
    ) -> Mapping[str, str] | None:
        """A turn starts; what it returns is added to the environment of the agent's processes."""

    def agent_turn_nudged(self, stage: str | None, agent: str, why: str) -> None:
        """The agent stopped without answering and was sent the recovery prompt."""

    def agent_turn_waiting(self, stage: str | None, agent: str, why: str) -> None:
        """The agent's turn waits for a slot of its runtime (--max-agents) before it starts."""

    def agent_turn_ended(
        self, stage: str | None, agent: str, outcome: str, reason: str | None, seconds: float
    ) -> None: ...


class Silent:
    """An observer that shows nothing."""

    def attempt_started(self, workflow: str, run_id: str, attempt: int, record_dir: Path) -> None:
        pass

    def notice(self, text: str) -> None:
        pass

    def stage_reused(self, name: str, value: Any, record: StageRecord | None, how: str) -> None:
        pass

    def stage_started(self, name: str, why: str | None) -> None:
        pass

    def stage_ended(self, record: StageRecord, seconds: float) -> None:
        pass

    def logged(self, stage: str | None, message: str) -> None:
        pass

    def status(self, text: str, progress: float | None) -> None:
        pass

    def group_started(self, label: str, branches: int, concurrency: int | None) -> None:
        pass

    def group_ended(self, label: str, tally: str) -> None:
        pass

    def branch_started(self, label: str, branch: str) -> None:
        pass

    def branch_ended(self, label: str, branch: str, outcome: str, reason: str | None, seconds: float) -> None:
        pass

    def agent_turn_started(self, stage: str | None, agent: str, harness: str, turn: int, label: str) -> None:
        pass

    def agent_turn_nudged(self, stage: str | None, agent: str, why: str) -> None:
        pass

    def agent_turn_waiting(self, stage: str | None, agent: str, why: str) -> None:
        pass

    def agent_turn_ended(self, stage: str | None, agent: str, outcome: str, reason: str | None, seconds: float) -> None:
        pass
