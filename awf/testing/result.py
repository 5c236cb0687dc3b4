"""What a test gets back: the attempt's ending, stages, agents, turns and logs, read off its files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..agents.channel import read_turn
from ..record.entries import ReportLine, RuntimeOptions, TurnLine
from ..record.file_kinds import OutStage, RetryFields, StageRecord
from ..record.folder import read_json_file
from ..record.log import read_lines
from ..record.schemas import JsonSchema
from .scripts import Turn


class NotCompleted(AssertionError):
    """`run.value` of an attempt that did not complete. Its cause is the workflow's own error."""


@dataclass(frozen=True)
class Ending:
    """How the attempt ended: outcome, exit code, the stage it ended in, why, and the command that
    goes on; for a stop worth retrying, when awf serve would retry it (`number`, `of`, `after`, `at`)."""

    outcome: str
    exit_code: int
    stage: str | None
    reason: str | None
    go_on: str | None
    retry: RetryFields | None = None


@dataclass(frozen=True)
class Stage:
    """A stage the attempt entered: `how` is ran, reused or provided (given with values=)."""

    name: str
    how: str
    outcome: str
    value: Any
    summary: str | None
    reason: str | None
    attempt: int  # the attempt whose record it is
    record: Mapping[str, Any] | None = field(repr=False, default=None)


@dataclass(frozen=True)
class Agent:
    """An agent the attempt opened: its key, the runtime the workflow gave, its instructions."""

    key: str
    runtime: RuntimeOptions
    instructions: str | None
    stage: str | None

    @property
    def harness(self) -> str:
        return str(self.runtime["harness"])


@dataclass(frozen=True)
class Log:
    """A `wf.log(...)` line."""

    message: str
    stage: str | None
    data: dict[str, Any] | None


V = TypeVar("V")


@dataclass
class Run(Generic[V]):
    """One attempt of a workflow in a test, and its run's files."""

    ending: Ending
    attempt: int
    stages: list[Stage]
    agents: list[Agent]
    turns: list[Turn]
    logs: list[Log]
    needs: dict[str, JsonSchema] | None  # a start part-way that stopped for values: each stage's result schema
    notices: list[str]
    record_dir: Path
    out: dict[str, Any] = field(repr=False)
    error: BaseException | None = field(repr=False, default=None)  # the workflow's own error, if any
    _value: Any = field(repr=False, default=None)
    report: str | None = None  # the markdown the workflow's report= returned at this attempt's end
    report_error: str | None = None  # what the report raised, if it did: the ending is unchanged

    @property
    def value(self) -> V:
        """What the workflow returned (instances of the types it returned, as it returned them).
        Raises NotCompleted, caused by the workflow's error, otherwise."""
        if self.ending.outcome == "completed":
            return self._value  # type: ignore[no-any-return]
        ending = self.ending
        where = f" in {ending.stage}" if ending.stage else ""
        lines = [f"attempt {self.attempt} did not complete: it ended {ending.outcome}{where}: {ending.reason}"]
        if ending.go_on:
            lines.append(f"  go on: {ending.go_on}")
        lines.append(f"  record: {self.record_dir}")
        raise NotCompleted("\n".join(lines)) from self.error

    def turns_of(self, key: str) -> list[Turn]:
        """The turns of agent `key`, in order."""
        return [turn for turn in self.turns if turn.agent == key]

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        entered = ", ".join(stage.name for stage in self.stages) or "none"
        raise KeyError(f"attempt {self.attempt} did not enter stage {name!r} (it entered: {entered})")


def read_run(
    record_dir: Path, attempt: int, out: dict[str, Any], value: Any, error: BaseException | None, notices: list[str]
) -> Run[Any]:
    """The attempt `attempt` of the run in `record_dir`, as its files tell it."""
    agents: list[Agent] = []
    turns: list[Turn] = []
    logs: list[Log] = []
    written: dict[str, StageRecord] = {}
    agent_dirs: dict[str, Path] = {}
    report: ReportLine | None = None
    for line in read_lines(record_dir / "run.jsonl"):
        item = line.entry
        if item["kind"] == "agent" and item["attempt"] == attempt:
            agents.append(
                Agent(
                    item["agent"],
                    item.get("runtime") or {"harness": item["harness"]},
                    item.get("instructions"),
                    item.get("stage"),
                )
            )
            agent_dirs[item["agent"]] = Path(item["dir"]) if item.get("dir") else record_dir
        elif item["kind"] == "turn" and item["attempt"] == attempt:
            turns.append(_turn(item, agent_dirs.get(item["agent"]), attempt))
        elif item["kind"] == "log" and item["attempt"] == attempt:
            logs.append(Log(item["message"], item.get("stage"), item.get("data")))
        elif item["kind"] == "stage" and item["attempt"] == attempt:
            written[item["stage"]] = item["record"]
        elif item["kind"] == "report" and item["attempt"] == attempt:
            report = item
    stages = [_stage(entry, written, record_dir) for entry in out.get("stages") or []]
    ending = Ending(
        out["outcome"], out["exit_code"], out.get("stage"), out.get("reason"), out.get("go_on"), out.get("retry")
    )
    needs = out.get("needs")
    run: Run[Any] = Run(ending, attempt, stages, agents, turns, logs, needs, notices, record_dir, out, error, value)
    if report is not None:
        run.report, run.report_error = report["text"], report.get("error")
    return run


def _turn(item: TurnLine, agent_dir: Path | None, attempt: int) -> Turn:
    schema = None
    if agent_dir is not None:
        try:
            schema = read_turn(agent_dir / f"turn-{item['turn']}")["schema"]
        except FileNotFoundError:
            schema = None
    return Turn(
        item["agent"],
        item["turn"],
        item.get("prompt", ""),
        schema,
        item.get("label"),
        item.get("stage"),
        bool(item.get("nudged")),
        attempt,
        item["outcome"],
        item.get("value"),
        item.get("reason"),
    )


def _stage(entry: OutStage, written: dict[str, StageRecord], record_dir: Path) -> Stage:
    name = entry["stage"]
    record: Mapping[str, Any] | None = written.get(name) if entry["how"] != "reused" else None
    if record is None:
        try:
            record = read_json_file(record_dir / "stages" / f"{name}.json", "stage")
        except FileNotFoundError:
            record = None
    record = record or {}
    return Stage(
        name,
        entry["how"],
        entry["outcome"],
        record.get("value"),
        record.get("summary"),
        record.get("reason"),
        entry.get("attempt", record.get("attempt", 0)),
        record or None,
    )
