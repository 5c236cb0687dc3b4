"""The closing block an attempt ends with: the same whether progress was a live view or lines."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..engine.durations import format_duration
from ..record.clock import parse_iso
from ..record.costs import TurnCost, add_up, money, turn_costs
from ..record.summary import cost_lines
from ..record.waiting import retry_time
from .one_line import first_line

ENDING_MARKS = {
    "completed": "✓",
    "parked": "◆",
    "stopped": "■",
    "failed": "✗",
    "timed-out": "✗",
    "cancelled": "✗",
    "interrupted": "✗",
}


def relative(path: Path | str) -> str:
    """A path as short as it reads from the current folder."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def closing_lines(
    out: dict[str, Any],
    *,
    record_dir: Path | None = None,
    detail: str | None = None,
    hints: list[str] | None = None,
    costs: list[TurnCost] | None = None,
) -> list[str]:
    """The ending, where and why, the totals, the command that goes on and where the record is.

    `out` is the attempt's out.json (or, for an attempt that never ended, one made to match).
    """
    outcome = out["outcome"]
    mark = ENDING_MARKS.get(outcome, "?")
    name = f"{out['workflow']}/{out['id']}"
    record_dir = record_dir or (Path(out["record"]) if out.get("record") else None)
    lines: list[str] = []
    if outcome == "completed":
        lines.append(f"{mark} {name} completed (attempt {out['attempt']})")
    else:
        if detail:
            lines += detail.rstrip().splitlines()
        where = f" in {out['stage']}" if out.get("stage") else _between(out)
        code = f", exit {out['exit_code']}" if out.get("exit_code") is not None else ""
        lines.append(f"{mark} {name} {outcome}{where} (attempt {out['attempt']}{code})")
        if out.get("reason") and out.get("needs"):
            # Where to start part-way: the list of values it needs is the answer, kept whole.
            first, *rest = str(out["reason"]).splitlines()
            lines.append(f"  why:     {first}")
            lines += [f"           {line}" for line in rest]
        elif out.get("reason"):
            lines += why_lines(str(out["reason"]), name)
        lines += [f"  note:    {hint}" for hint in hints or []]
    if costs is None:  # an attempt seen from outside (awf watch): its cost read off its log
        costs = turn_costs(cost_lines(record_dir / "run.jsonl")) if record_dir is not None else []
    lines.append(f"  totals:  {totals(out, costs)}")
    lines += breakdown(costs, out["attempt"])
    if out.get("retry"):
        retry = out["retry"]
        lines.append(
            f"  retry:   at {retry_time(retry)} ({retry['number']} of {retry['of']}) by awf serve or awf wake; "
            f"awf cancel {name} withdraws it"
        )
    if outcome != "completed" and out.get("go_on"):
        lines.append(f"  go on:   {out['go_on']}")
    if out.get("report_error"):
        lines.append(f"  report:  none: {first_line(out['report_error'])}")
    elif out.get("report"):
        lines.append(f"  report:  {relative(out['report'])}")
    worktree = out.get("worktree")
    if worktree:
        branch = worktree["branch"]
        lines.append(f"  branch:  {branch}: git log {branch}; git diff {worktree['base'][:12]}...{branch}")
    if record_dir is not None:
        lines.append(f"  records: {relative(record_dir)}")
    return lines


def why_lines(reason: str, name: str, width: int | None = None) -> list[str]:
    """Why the attempt ended: its first line and, when there is more, its last (the line of a
    program's stderr that says what broke), each cut to the terminal's width (where there is
    one); the whole of it is in `awf logs`."""
    said = [line.strip() for line in reason.splitlines() if line.strip()]
    if not said:
        return []
    width = width or _terminal_width()
    room = max(width - len(WHY), 20) if width else None
    lines = [WHY + _cut(said[0].rstrip(" …"), room)]
    if len(said) > 1:
        lines.append(" " * len(WHY) + _cut(said[-1], room))
        lines.append(" " * len(WHY) + f"(the whole of it: awf logs {name})")
    return lines


WHY = "  why:     "


def _cut(line: str, room: int | None) -> str:
    return line if room is None or len(line) <= room else line[: room - 1] + "…"


def _terminal_width() -> int | None:
    """The width of the terminal stderr is on ($COLUMNS where set); None (no cutting) when stderr
    is on no terminal: a log or a pipe keeps the whole line."""
    try:
        if not sys.stderr.isatty():
            return None
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None
    given = os.environ.get("COLUMNS", "")
    return int(given) if given.isdigit() and int(given) > 0 else columns


def totals(out: dict[str, Any], costs: list[TurnCost]) -> str:
    """Stages ran and reused, the attempt's time, its agents' turns and what they cost, and what
    the run has cost so far when that is more."""
    stages = out.get("stages") or []
    how = {key: sum(1 for item in stages if item.get("how") == key) for key in ("ran", "reused", "provided", "skipped")}
    parts = [f"{len(stages)} stage{'' if len(stages) == 1 else 's'}"]
    detail = [f"{count} {key}" for key, count in how.items() if count]
    if detail:
        parts[0] += f" ({', '.join(detail)})"
    try:
        parts.append(format_duration(max(parse_iso(out["ended"]) - parse_iso(out["started"]), 0.0)))
    except (KeyError, TypeError, ValueError):
        pass
    attempt = add_up(turn for turn in costs if turn.attempt == out["attempt"])
    if attempt.turns:
        parts.append(f"{attempt.turns} turn{'' if attempt.turns == 1 else 's'}")
    if attempt.cost is not None or attempt.unknown:
        parts.append(money(attempt.cost, attempt.unknown))
    run = add_up(costs)
    if (run.cost, run.unknown) != (attempt.cost, attempt.unknown):
        parts.append(f"run {money(run.cost, run.unknown)}")
    return " · ".join(parts)


def breakdown(costs: list[TurnCost], attempt: int) -> list[str]:
    """The attempt's turns and cost by stage and by agent, when its agents took any turn."""
    turns = [turn for turn in costs if turn.attempt == attempt]
    if not turns:
        return []
    lines = []
    for label, key in (("stages:", "stage"), ("agents:", "agent")):
        groups: dict[str, list[TurnCost]] = {}
        for turn in turns:
            groups.setdefault(getattr(turn, key) or "(between stages)", []).append(turn)
        parts = []
        for name, group in groups.items():
            total = add_up(group)
            said = money(total.cost, total.unknown)
            parts.append(
                f"{name} {len(group)} turn{'' if len(group) == 1 else 's'}" + (f" {said}" if said != "-" else "")
            )
        lines.append(f"  {label:<9}" + " · ".join(parts))
    return lines


def _between(out: dict[str, Any]) -> str:
    ran = [item["stage"] for item in out.get("stages") or []]
    return f" between stages, after {ran[-1]}" if ran else " before any stage"
