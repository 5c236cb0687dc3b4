"""`--max-cost`: the most a run may spend on its agents, checked at every turn's start and end.

The budget is the run's, in US dollars: given with `awf run --max-cost 5.00`, recorded in each
attempt's `attempt-start` line, and kept by a continue that does not give it again. When what the
run's turns have cost passes it (read off the log, the turns earlier attempts could not record
among them), the attempt stops at the end of the turn that passed it, or before the next turn,
saying what was spent and how to go on with a higher budget. Cost that is unknown is said to be
unknown; it is never taken as zero, nor as over the budget.
"""

from __future__ import annotations

import math
from typing import Any

from ..record.costs import add_up, money, turn_costs
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


def check(state: AttemptState, limit: float | None, when: str) -> None:
    """Stop the attempt (exit 3) when the run has cost more than `limit`. `when`: at the end of a
    turn, or before one."""
    if limit is None:
        return
    total = add_up(turn_costs(cost_lines(state.paths.log)))
    if total.cost is None or total.cost <= limit:
        return
    higher = _suggest(total.cost, limit)
    state.raise_budget = higher
    unknown = (
        f", and {total.unknown} turn{'' if total.unknown == 1 else 's'} whose cost is unknown" if total.unknown else ""
    )
    reason = (
        f"the run has cost {money(total.cost)}{unknown}, more than its budget of {money(limit)} (--max-cost); "
        f"stopped {when}. To go on, give a higher budget: --max-cost {higher:.2f}"
    )
    stop = Stop(reason, stage=state.current_stage)
    state.pending_stop = stop
    raise stop


def _suggest(spent: float, limit: float) -> float:
    """Twice the budget, or half again what was spent when that is more, to the cent above."""
    return math.ceil(max(limit * 2, spent * 1.5) * 100) / 100
