"""What a run's agents cost, read off its log: every turn once, by attempt, stage and agent.

A turn's cost is what its `turn` line says (its program reported it, or awf priced its tokens),
unless a `usage` line names the same attempt, agent and turn: a later attempt read that turn's
use from its agent's session file, and its figures take the turn's place. Cost is unknown, not
zero, for a turn whose tokens have no price, whose session could not be read, or which went
unreported and no attempt has read yet. Nothing here is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from sys import intern
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .entries import Entry, TurnLine, UsageLine
    from .file_kinds import CostFigures


@dataclass(slots=True)
class TurnCost:
    attempt: int
    agent: str
    turn: int
    stage: str | None
    cost: float | None  # US dollars; None: none (an exec turn) or unknown (see `unknown`)
    tokens: int | None  # input and output tokens, where known
    unknown: str | None = None  # why the cost is not known, when it should be
    recovered: bool = False  # read by a later attempt from the agent's session file


def turn_costs(entries: Iterable[Entry]) -> list[TurnCost]:
    """Each turn's cost, in the order the turns were recorded, from the log's `turn` and `usage` lines."""
    costs = TurnCosts()
    for entry in entries:
        costs.add(entry)
    return costs.turns


class TurnCosts:
    """Each turn's cost, taken from the log's lines one at a time: what is kept is one TurnCost a
    turn, never the lines."""

    def __init__(self) -> None:
        self._turns: dict[tuple[int, str, int], TurnCost] = {}

    def add(self, entry: Entry) -> None:
        """Take a line of the log: a `turn` or `usage` line counts, any other is passed over."""
        if entry["kind"] == "usage":
            self._turns[(entry["attempt"], entry["agent"], entry["turn"])] = _recovered(entry)
        elif entry["kind"] == "turn":
            key = (entry["attempt"], entry["agent"], entry["turn"])
            if key not in self._turns or not self._turns[key].recovered:
                self._turns[key] = _reported(entry)

    @property
    def turns(self) -> list[TurnCost]:
        return list(self._turns.values())


def _reported(entry: TurnLine) -> TurnCost:
    usage = entry.get("usage")
    cost = turn_cost(entry)
    unknown = None
    if cost is None and usage is not None:
        unknown = str(usage.get("cost_unknown") or "its program reported tokens but no cost")
    if entry.get("unreported"):
        unknown = "not yet read from its session: the next attempt reads it"
    tokens = None
    if usage is not None:
        tokens = _whole(usage.get("input")) + _whole(usage.get("output"))
    return TurnCost(
        entry["attempt"],
        intern(entry["agent"]),
        entry["turn"],
        _name(entry.get("stage")),
        cost,
        tokens,
        unknown,
    )


def _recovered(entry: UsageLine) -> TurnCost:
    tokens = entry["tokens"]
    cost = entry["cost"]
    unknown = None
    if cost is None:
        unknown = entry.get("unknown") or entry.get("cost_unknown") or "unknown"
    return TurnCost(
        entry["attempt"],
        intern(entry["agent"]),
        entry["turn"],
        _name(entry.get("stage")),
        float(cost) if cost is not None else None,
        _whole(tokens.get("input")) + _whole(tokens.get("output")) if tokens else None,
        unknown,
        recovered=True,
    )


def turn_cost(entry: Mapping[str, Any]) -> float | None:
    """What a turn cost in US dollars, as its own line says."""
    for holder in (entry, entry.get("usage") if isinstance(entry.get("usage"), dict) else None):
        if holder is None:
            continue
        for key in ("cost_usd", "cost"):
            if _number(holder.get(key)):
                return float(holder[key])
    return None


@dataclass
class CostSum:
    """The cost of some turns: what is known, and how many turns' cost is not."""

    cost: float | None = None  # None: no turn's cost is known
    unknown: int = 0
    turns: int = 0
    recovered: int = 0

    def add(self, turn: TurnCost) -> None:
        self.turns += 1
        self.recovered += turn.recovered
        if turn.cost is not None:
            self.cost = (self.cost or 0.0) + turn.cost
        elif turn.unknown:
            self.unknown += 1

    def as_json(self) -> CostFigures:
        return {"cost": _cents(self.cost), "unknown": self.unknown, "turns": self.turns}


def add_up(turns: Iterable[TurnCost]) -> CostSum:
    total = CostSum()
    for turn in turns:
        total.add(turn)
    return total


def breakdown(turns: Iterable[TurnCost]) -> list[dict[str, Any]]:
    """The cost by attempt, stage and agent, recovered turns apart: rows of `awf runs WORKFLOW/ID`."""
    groups: dict[tuple[int, str | None, str, bool], CostSum] = {}
    for turn in turns:
        groups.setdefault((turn.attempt, turn.stage, turn.agent, turn.recovered), CostSum()).add(turn)
    return [
        {"attempt": attempt, "stage": stage, "agent": agent, "recovered": recovered, **total.as_json()}
        for (attempt, stage, agent, recovered), total in groups.items()
    ]


def money(cost: float | None, unknown: int = 0) -> str:
    """$1.23, with what is unknown said: `$1.23 + 2 turns unknown`, or `unknown`."""
    if cost is None:
        return "unknown" if unknown else "-"
    text = f"${cost:.2f}" if cost >= 0.01 or cost == 0 else f"${cost:.4f}"
    if unknown:
        text += f" + {unknown} turn{'' if unknown == 1 else 's'} unknown"
    return text


def _cents(cost: float | None) -> float | None:
    # Sums of floats drift in the last digits: a figure read by jq should read as it was added.
    return None if cost is None else round(cost, 10)


def _name(value: Any) -> Any:
    # Every turn of a stage names it: one string for them all, not one a turn, in a run of many.
    return intern(value) if isinstance(value, str) else value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value: Any) -> int:
    return int(value) if _number(value) else 0
