"""The look-ahead: run the workflow as far as its start point without running any stage.

Used to find the values a start part-way needs, to check a --values file before anything is
recorded, and to preview a continue (--plan). Stages before the start point hand back their
recorded value, the value given, or a stand-in that fits their schema; the code between stages
runs, as it does on every attempt; no stage's work is called, no agent is opened and nothing
is written. A wait for events is answered as the attempt would answer it now (a recorded take,
an event in the inbox, a due time passed), or is where the attempt would park. The look-ahead
ends at the start point, at a park, at a stop, or where it cannot see further; previewing a run
with events, it goes on past the start point, each stage that would run handing back its
recorded value or a stand-in, to find where the attempt would park.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..record.entries import Args
from ..record.file_kinds import StageRecord, WaitFields
from ..record.schemas import JsonSchema
from .errors import Stop
from .plan import Halt, Reuse, Run, StagePlan, Stamp
from .schema import Schema
from .schema_text import stand_in


class LookAheadEnd(BaseException):
    """Raised into the workflow where the look-ahead cannot or need not go on."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass
class Seen:
    """A stage the look-ahead entered before its start point."""

    name: str
    how: str  # reused, provided, skipped, needs, none-needed, fresh
    record: StageRecord | None = None
    schema: Schema | None = None
    why: str | None = None  # for a stage that runs: why it does

    @property
    def json_schema(self) -> JsonSchema:
        """The JSON Schema of the stage's result ({} for a stage that declares none)."""
        return self.schema.schema if self.schema is not None else {}


@dataclass
class SeenWait:
    """A wait for events the look-ahead reached, and how the attempt would answer it."""

    wait: str  # its key: {stage}/{kind}:{names}#{occurrence}
    after: str | None  # the last stage entered before it
    names: list[str]
    how: str  # replayed (its answer is recorded), queued (an event in the inbox), due (its time came), parks
    event: str | None = None  # the event it hands back
    due: str | None = None  # for a wait that parks on a time


@dataclass
class LookAhead:
    """What the look-ahead found."""

    seen: list[Seen] = field(default_factory=list)
    start: tuple[str, str] | None = None  # the start point and why
    start_schema: Schema | None = None  # the result schema of the stage at the start point
    beyond_start: bool = False  # go on past the start point (a preview of a run with events)
    beyond: list[Seen] = field(default_factory=list)  # the stages entered after the start point, and how
    waits: list[SeenWait] = field(default_factory=list)
    park: list[WaitFields] | None = None  # what the attempt would park waiting for
    halt: tuple[str, Halt] | None = None  # the stage a continue would stop at, and why
    stop: str | None = None  # a wf.stop between stages
    ended: str | None = None  # where it could not see further
    returned: bool = False  # the workflow returned before reaching a start point
    completes: bool = False  # it returned after its start point (looking beyond it)
    value_problems: list[str] = field(default_factory=list)  # values given that do not fit
    fan_outs: set[str] = field(default_factory=set)  # the fan-outs entered: --values may give one whole

    @property
    def needs(self) -> list[Seen]:
        return [item for item in self.seen if item.how == "needs"]

    @property
    def parks_before_start(self) -> bool:
        """The attempt would park before it reaches its start point."""
        return self.park is not None and self.start is None

    def waited(self, wait: str, names: list[str], how: str, event: str | None) -> None:
        self.waits.append(SeenWait(wait, self._last_stage, names, how, event))

    def would_park(self, waits: list[WaitFields]) -> None:
        """The attempt would park here: the look-ahead, which waits for nothing, ends."""
        for wait in waits:
            names = list(wait.get("names") or [])
            self.waits.append(SeenWait(wait["wait"], self._last_stage, names, "parks", None, wait.get("due")))
        self.park = waits
        raise LookAheadEnd("park")

    @property
    def _last_stage(self) -> str | None:
        entered = [*self.seen, *([Seen(self.start[0], "start")] if self.start else []), *self.beyond]
        return entered[-1].name if entered else None

    def enter(
        self,
        name: str,
        schema: Schema | None,
        plan: StagePlan,
        replayed: list[str] | None = None,
        stamp: Stamp | None = None,
        *,
        fresh: bool = False,
    ) -> Any:
        """Decide as the real attempt would, but hand back a value instead of running anything.

        `replayed`: the waits answered from the record so far, which a redo reached keeps. A fresh
        stage, whose work is not called here, hands back its recorded value as if it were the same."""
        return self._decided(name, schema, plan, plan.enter(name, schema, stamp, fresh=fresh), replayed)

    def enter_each(
        self, name: str, branches: list[str], schema: Schema | None, plan: StagePlan, replayed: list[str] | None = None
    ) -> list[Any]:
        """A fan-out: each branch decided as a stage; those that run are where the start point is."""
        self.fan_outs.add(name)
        decisions = plan.enter_each(name, branches, schema)
        values: list[Any] = [None] * len(branches)
        runs = [index for index, decision in enumerate(decisions) if isinstance(decision, Run)]
        for index, decision in enumerate(decisions):
            if index not in runs:
                values[index] = self._decided(branches[index], schema, plan, decision, replayed)
        if runs and self.start is None:
            first = next((index for index in runs if decisions[index].start_point), runs[0])  # type: ignore[union-attr]
            why = decisions[first].why or ""  # type: ignore[union-attr]
            if not self.beyond_start:
                # Its siblings that run are shown with it; the look-ahead ends at the start point.
                self.start = (name if plan.from_stage == name else branches[first], why)
                others = [index for index in runs if index != first]
                self.beyond += [Seen(branches[i], "runs", None, schema, decisions[i].why) for i in others]  # type: ignore[union-attr]
                raise LookAheadEnd("start point")
            runs.sort(key=lambda index: index != first)
        for index in runs:
            values[index] = self._decided(branches[index], schema, plan, decisions[index], replayed)
        return values

    def _decided(
        self, name: str, schema: Schema | None, plan: StagePlan, decision: Any, replayed: list[str] | None
    ) -> Any:
        if self.start is not None:
            return self._beyond(name, schema, plan, decision)
        if isinstance(decision, Halt):
            if decision.bad_value:
                self.value_problems.append(decision.reason)
                self.seen.append(Seen(name, "provided", None, schema))
                return _stand_in(schema) if schema is not None else None
            if decision.needs and schema is not None:
                self.seen.append(Seen(name, "needs", None, schema))
                return _stand_in(schema)
            self.halt = (name, decision)
            raise LookAheadEnd("halt")
        if isinstance(decision, Reuse):
            self.seen.append(Seen(name, decision.how, decision.record, schema))
            return decision.value
        if isinstance(decision, Run) and decision.fresh:
            record = plan.records.get(name)
            self.seen.append(Seen(name, "fresh", record if isinstance(record, dict) else None, schema, decision.why))
            return self._would_run(name, schema, plan)
        self.start = (name, decision.why or "")
        self.start_schema = schema
        if not self.beyond_start:
            raise LookAheadEnd("start point")
        redo = plan.redo
        if redo is not None and name == redo.stage and not redo.reached:
            # As the attempt marks it on reaching the redo's stage; here only in memory.
            redo.reached, redo.before_stages, redo.before_waits = True, set(plan.reused), set(replayed or [])
        return self._would_run(name, schema, plan)

    def _beyond(self, name: str, schema: Schema | None, plan: StagePlan, decision: Any) -> Any:
        """A stage after the start point: reused, or run (its work not called: its record's value stands in)."""
        if isinstance(decision, Halt):
            self.halt = (name, decision)
            raise LookAheadEnd("halt")
        if isinstance(decision, Reuse):
            self.beyond.append(Seen(name, decision.how, decision.record, schema))
            return decision.value
        self.beyond.append(Seen(name, "runs", None, schema, decision.why))
        return self._would_run(name, schema, plan)

    def _would_run(self, name: str, schema: Schema | None, plan: StagePlan) -> Any:
        record = plan.records.get(name)
        if isinstance(record, dict) and record.get("outcome") == "succeeded":
            if schema is None:
                return None
            value, problem = schema.load(record.get("value"))
            if not problem:
                return value
        return _stand_in(schema) if schema is not None else None

    def agent(self) -> None:
        """An agent between stages: the look-ahead does not ask it, and cannot see past it."""
        self.ended = "an agent is asked between stages; the look-ahead does not ask agents"
        raise LookAheadEnd("agent")


def _stand_in(schema: Schema) -> Any:
    """A stand-in as the workflow would get it: an instance, for a result that is a Python type."""
    plain = stand_in(schema.schema)
    value, problem = schema.load(plain)
    return plain if problem else value


def look_ahead(workflow: Any, context: Any, args: Args, cwd: Path) -> LookAhead:
    """Run the workflow in look-ahead mode on `context` (whose state has `look_ahead` set)."""
    found: LookAhead = context._state.look_ahead

    async def main() -> None:
        try:
            await workflow.run(context, **args)
            if found.start is None:
                found.returned = True
            else:
                found.completes = True
        except LookAheadEnd:
            pass
        except Stop as stop:
            found.stop = stop.reason
        except Exception as error:
            found.ended = f"the code between stages raised {type(error).__name__}: {error}"

    import os

    previous = Path.cwd()
    os.chdir(cwd)
    try:
        asyncio.run(main())
    finally:
        os.chdir(previous)
    return found
