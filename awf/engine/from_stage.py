"""What a --from-stage may name, and which stage the command after a missed one redoes.

A --from-stage that breaks the stage-name rules, or that names a stage the run never recorded
and the look-ahead saw the workflow never enter, is refused before an attempt is recorded. One
that is recorded but never entered (a renamed stage) stops the attempt; the command it prints
names a stage that exists, never the one that just missed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..record.names import stage_name_problem


def name_refusal(from_stage: str) -> str | None:
    """The refusal for a --from-stage that cannot be a stage name, or None."""
    problem = stage_name_problem(from_stage)
    return f"--from-stage {from_stage}: {problem}" if problem else None


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _near(from_stage: str, names: list[str]) -> str | None:
    found = difflib.get_close_matches(from_stage, names, n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_refusal(from_stage: str, recorded: Iterable[str], entered: Iterable[str]) -> str | None:
    """The refusal for a --from-stage neither recorded nor entered, or None when it is one of them.

    Only for a look-ahead that saw the whole way: `entered` is every stage the workflow enters.
    """
    recorded, entered = _unique(recorded), _unique(entered)
    if from_stage in recorded or from_stage in entered:
        return None
    near = _near(from_stage, _unique([*recorded, *entered]))
    text = f"--from-stage {from_stage}: no such stage;" + (f" did you mean {near}?" if near else "")
    choices = [f"recorded: {', '.join(recorded)}"] if recorded else []
    if set(entered) != set(recorded):
        choices.append(f"the workflow enters: {', '.join(entered) or 'none'}")
    text += " " + "; ".join(choices)
    return text


@dataclass
class NeverReached:
    """An attempt that never entered its --from-stage: why it stops, and what goes on."""

    reason: str
    redo: str | None  # the one stage the command that goes on redoes, when one fits
    hints: list[str] = field(default_factory=list)


def never_reached(from_stage: str, records: Mapping[str, Any], entered: list[str]) -> NeverReached:
    """The stop of an attempt that entered `entered` and never its --from-stage.

    The command that goes on redoes a stage the workflow enters: the one close to the name
    given, else the one entered stage with no succeeded record (where a renamed stage now
    stands). Where neither picks a single stage, the choices are listed instead.
    """
    never = [name for name in records if name not in entered]
    reason = (
        f"the workflow never reached --from-stage {from_stage} (a typo, a renamed stage or a branch not "
        f"taken); recorded stages it never reached: {', '.join(never) or 'none'}"
    )
    near = _near(from_stage, [name for name in entered if name != from_stage])
    new = [name for name in entered if not _succeeded(records.get(name))]
    redo = near or (new[0] if len(new) == 1 else None)
    hints = []
    if redo is None and entered:
        hints.append(
            f"no single stage fits: redo from one of the stages the workflow enters ({', '.join(entered)}) "
            "with --continue --from-stage STAGE"
        )
    return NeverReached(reason, redo, hints)


def _succeeded(record: Any) -> bool:
    return isinstance(record, dict) and record.get("outcome") == "succeeded"
