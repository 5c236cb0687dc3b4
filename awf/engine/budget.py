"""`--max-cost`: the most a run may spend on its agents, checked before every turn starts.

The budget is the run's, in US dollars: given with `awf run --max-cost 5.00`, recorded in each
attempt's `attempt-start` line, and kept by a continue that does not give it again. A turn that
passes it is paid for: its outcome goes to the workflow as any turn's does, so a stage that needed
no more turns succeeds and is recorded. When what the run's turns have cost is past the budget
(read off the log, the turns earlier attempts could not record among them), the attempt stops
before the next turn starts, saying what was spent, the budget, the turn it did not start, and a
budget the command that goes on can get past the stopped stage with. Cost that is unknown is said
to be unknown; it is never taken as zero, nor as over the budget, and a run with agents whose cost
awf cannot see is told so once.
"""

from __future__ import annotations

import math
from typing import Any

from ..record.costs import TurnCost, add_up, money, turn_costs
from ..record.summary import cost_lines
from .context import AttemptState
from .errors import Stop


def parse_max_cost(text: str) -> float:
    """`5`, `5.00`, `$5.00`: dollars above zero. Raises ValueError saying what it takes."""
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"is dollars above zero, such as 5.00, not {text!r}")
    return value


def inherited(history: Any) -> float | None:
    """The budget the run's last attempt ran with: a continue keeps it unless given another."""
    last = history.last if history is not None else None
    if last is None:
        return None
    value = last.start.get("max_cost")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def check(state: AttemptState, limit: float | None, agent: str, turn: int, reports_cost: bool) -> None:
    """Before agent `agent`'s turn `turn` starts: stop the attempt (exit 3) when the run has cost
    more than `limit`. `reports_cost`: whether the agent's harness says what a turn costs."""
    if limit is None:
        return
    turns = state.costs.turns() if state.costs is not None else turn_costs(cost_lines(state.paths.log))
    _say_blind(state, agent, reports_cost, turns)
    total = add_up(turns)
    if total.cost is None or total.cost <= limit:
        return
    stage = state.current_stage
    higher = suggest(total.cost, _stage_spent(turns, state.attempt, stage))
    state.raise_budget = higher
    unknown = (
        f", and {total.unknown} turn{'' if total.unknown == 1 else 's'} whose cost is unknown" if total.unknown else ""
    )
    where = f" in stage {stage}" if stage is not None else ""
    reason = (
        f"the run has cost {money(total.cost)}{unknown}, more than its budget of {money(limit)} (--max-cost); "
        f"stopped before agent {agent}'s turn {turn}{where} started. "
        f"To go on, give a higher budget: --max-cost {higher:.2f}"
    )
    stop = Stop(reason, stage=stage)
    state.pending_stop = stop
    raise stop


def suggest(spent: float, stage_spent: float) -> float:
    """What the run has spent, and again what the stopped stage spent on this attempt, so that
    redoing it fits: rounded up to a whole dollar."""
    return float(math.ceil(round(spent + stage_spent, 6)))


def _stage_spent(turns: list[TurnCost], attempt: int, stage: str | None) -> float:
    if stage is None:
        return 0.0
    return sum(turn.cost for turn in turns if turn.attempt == attempt and turn.stage == stage and turn.cost is not None)


def _say_blind(state: AttemptState, agent: str, reports_cost: bool, turns: list[TurnCost]) -> None:
    """Once an attempt: the budget cannot see an agent that reports no cost (exec), nor a turn
    whose cost is unknown (a model with no price)."""
    if state.budget_blind_said:
        return
    if not reports_cost:
        why = f"agent {agent} reports no cost"
    else:
        unseen = next((turn for turn in turns if turn.cost is None), None)
        if unseen is None:
            return
        why = f"agent {unseen.agent}'s turn {unseen.turn} has no known cost"
        if unseen.unknown:
            why += f" ({unseen.unknown})"
    state.budget_blind_said = True
    state.observer.notice(f"--max-cost cannot see what some agents spend: {why}; the budget counts only known cost")
