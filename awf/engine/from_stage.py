"""What a --from-stage may name, and which stage the command after a missed one redoes.

A --from-stage that breaks the stage-name rules, or that names a stage the look-ahead saw the
workflow never enter (a typo, or a recorded stage since renamed), is refused before an attempt is
recorded, naming the stages to choose from. Where the look-ahead cannot see the whole way, one
that is never entered stops the attempt; the command it prints names a stage that exists, never
the one that just missed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..record.names import stage_name_problem


def name_refusal(from_stage: str, flag: str = "--from-stage") -> str | None:
    """The refusal for a --from-stage (or `flag`, such as --to-stage) that cannot be a stage name, or None."""
    problem = stage_name_problem(from_stage)
    if not problem:
        return None
    # Stage names are lowercase, with '-' between words: the name as it would be written so.
    near = "-".join(from_stage.strip().lower().split())
    mean = f"; did you mean {near}?" if near != from_stage and not stage_name_problem(near) else ""
    return f"{flag} {from_stage}: {problem}{mean}"


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _near(from_stage: str, names: list[str]) -> str | None:
    import difflib  # only a stage name that matches none is looked up

    found = difflib.get_close_matches(from_stage, names, n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_refusal(
    from_stage: str,
    recorded: Iterable[str] | Mapping[str, Any],
    entered: Iterable[str],
    flag: str = "--from-stage",
) -> str | None:
    """The refusal for a --from-stage the workflow does not enter, or None when it enters it.

    Only for a look-ahead that saw the whole way: `entered` is every stage the workflow enters;
    `recorded`, the run's records by stage (or only their names). A name the run recorded and
    the workflow no longer enters is a renamed (or removed) stage.
    """
    records = recorded if isinstance(recorded, Mapping) else dict.fromkeys(recorded)
    recorded, entered = _unique(recorded), _unique(entered)
    if from_stage in entered:
        return None
    if from_stage in recorded:
        missed = never_reached(from_stage, records, entered)
        text = (
            f"{flag} {from_stage}: the workflow no longer enters it "
            "(a renamed or removed stage, or a branch not taken);"
        )
        text += f" did you mean {missed.redo}?" if missed.redo else ""
        return text + f" the workflow enters: {', '.join(entered) or 'none'}"
    near = _near(from_stage, _unique([*recorded, *entered]))
    text = f"{flag} {from_stage}: no such stage;" + (f" did you mean {near}?" if near else "")
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
