"""The stages a redo in a run with events leaves stale: current records that will run again.

A run with events keeps its records current through a redo (`--from-stage`); its `redo` line
marks the stage, and its `redo-reached` line, once an attempt gets there, the stages reused on
the way. From then on a stage whose record is older than the redo runs again when the workflow
enters it. Before the redo is reached, its stage and the stages the workflow entered after it
will run again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .entries import Entry, RedoLine, RedoReachedLine


def stale_stages(entries: Iterable[Entry], records: Mapping[str, Any]) -> dict[str, str]:
    """Each stale stage, with why: read off the log's entries (in order) and the current records."""
    redo: RedoLine | None = None
    reached: RedoReachedLine | None = None
    entered: dict[int, list[str]] = {}
    for entry in entries:
        if entry["kind"] == "redo":
            redo, reached = entry, None
        elif entry["kind"] == "redo-reached" and redo is not None and entry["redo_attempt"] == redo["attempt"]:
            reached = entry
        elif entry["kind"] == "stage-start" or entry["kind"] == "stage-reused":
            entered.setdefault(entry["attempt"], []).append(entry["stage"])
    if redo is None:
        return {}
    attempt, stage = redo["attempt"], redo["stage"]
    why = f"older than the redo from {stage} in attempt {attempt}"
    older = {
        name
        for name, record in records.items()
        if isinstance(record, dict) and record.get("outcome") == "succeeded" and record.get("attempt", 0) < attempt
    }
    if reached is not None:
        before = set(reached["before_stages"])
        return {name: why for name in records if name in older and name not in before}
    # Not reached yet: the stage and what the last attempt that entered it entered after it.
    order = next((entered[n] for n in sorted(entered, reverse=True) if stage in entered[n]), [stage])
    after = order[order.index(stage) :]
    return {name: why for name in records if name in older and name in after}
