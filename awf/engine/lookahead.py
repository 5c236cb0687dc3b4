"""The look-ahead: run the workflow as far as its start point without running any stage.

Used to find the values a start part-way needs, to check a --values file before anything is
recorded, and to preview a continue (--plan). Stages before the start point hand back their
recorded value, the value given, or a stand-in that fits their schema; the code between stages
runs, as it does on every attempt; no stage's work is called, no agent is opened and nothing
is written. The look-ahead ends at the start point, at a stop, or where it cannot see further.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import Stop
from .plan import Halt, Reuse, StagePlan
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
    how: str  # reused, provided, needs, none-needed
    record: dict[str, Any] | None = None
    schema: Schema | None = None

    @property
    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of the stage's result ({} for a stage that declares none)."""
        return self.schema.schema if self.schema is not None else {}


@dataclass
class LookAhead:
    """What the look-ahead found."""

    seen: list[Seen] = field(default_factory=list)
    start: tuple[str, str] | None = None  # the start point and why
    halt: tuple[str, Halt] | None = None  # the stage a continue would stop at, and why
    stop: str | None = None  # a wf.stop between stages
    ended: str | None = None  # where it could not see further
    returned: bool = False  # the workflow returned before reaching a start point
    value_problems: list[str] = field(default_factory=list)  # values given that do not fit

    @property
    def needs(self) -> list[Seen]:
        return [item for item in self.seen if item.how == "needs"]

    def enter(self, name: str, schema: Schema | None, plan: StagePlan) -> Any:
        """Decide as the real attempt would, but hand back a value instead of running anything."""
        decision = plan.enter(name, schema)
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
        self.start = (name, decision.why or "")
        raise LookAheadEnd("start point")

    def agent(self) -> None:
        """An agent between stages: the look-ahead does not ask it, and cannot see past it."""
        self.ended = "an agent is asked between stages; the look-ahead does not ask agents"
        raise LookAheadEnd("agent")


def _stand_in(schema: Schema) -> Any:
    """A stand-in as the workflow would get it: an instance, for a result that is a Python type."""
    plain = stand_in(schema.schema)
    value, problem = schema.load(plain)
    return plain if problem else value


def look_ahead(workflow: Any, context: Any, args: dict[str, Any], cwd: Path) -> LookAhead:
    """Run the workflow in look-ahead mode on `context` (whose state has `look_ahead` set)."""
    found: LookAhead = context._state.look_ahead

    async def main() -> None:
        try:
            await workflow.run(context, **args)
            found.returned = True
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
