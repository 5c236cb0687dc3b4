"""`awf set`: a stage's current record given a value by hand, checked as a continue checks it.

No result schema is stored with a record, so the stage's schema is the one its code declares now:
the workflow file the run records is loaded and looked ahead to the stage, as `--plan` does (the
code between stages runs, no stage's work is called, nothing is written). That is the schema the
next continue checks the value against, so a value `awf set` takes is one the continue reuses.
The run's claim is held from the first read to the last write: no attempt starts meanwhile, and
a run with a live attempt is refused.
"""

from __future__ import annotations

import getpass
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..record import entries, file_kinds, folder
from ..record.clock import now_iso
from ..record.errors import RecordError
from ..record.file_kinds import StageRecord, StageRecords
from ..record.layout import RunPaths
from ..record.names import stage_name_problem
from .claim import claim_continue
from .errors import Refusal
from .loader import load_workflow
from .request import RunRequest


@dataclass
class SetValue:
    """What `awf set` did: the stage, the old and new digests, and the stages computed from the old value."""

    stage: str
    old: str
    new: str
    after: list[str]


class BadValue(Exception):
    """The value does not fit the stage: every problem, one a line. Nothing was written."""

    def __init__(self, stage: str, problems: list[str]) -> None:
        super().__init__(f"the value does not fit stage {stage}'s result; nothing was written:")
        self.problems = problems


def digest(value: Any) -> str:
    """sha256 of a value as canonical JSON: keys sorted, no spaces, UTF-8."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def current_value(paths: RunPaths, stage: str) -> StageRecord:
    """The stage's current record, or Refusal when it has none (or it cannot be read)."""
    problem = stage_name_problem(stage)
    if problem:
        raise Refusal(problem)
    records = folder.read_stage_records(paths)
    record = records.get(stage)
    if record is None:
        recorded = ", ".join(records) or "none"
        raise Refusal(f"run {paths.name} has no record of stage {stage}; its recorded stages: {recorded}")
    if isinstance(record, RecordError):
        raise Refusal(f"stage {stage}'s record cannot be read: {record}; fix the file by hand, or redo the stage")
    return record


def set_value(paths: RunPaths, stage: str, value: Any) -> SetValue:
    """Check `value` against the stage's result and make it the stage's current record, or raise
    BadValue (nothing written) or Refusal (a live attempt, a stage the code cannot be seen to reach)."""
    history = folder.read_history(paths, ended_stages=False)
    file = history.run.get("file")
    if not file:
        raise Refusal(f"run {paths.name} records no workflow file, and the stage's result is read off its code")
    workflow = load_workflow(file)
    request = RunRequest(target=file, run_id=paths.id, resume=True, run_root=paths.root, from_stage=stage, preview=True)
    claimed = claim_continue(request, workflow, paths.root, Path.cwd())
    try:
        record = current_value(paths, stage)
        records = folder.read_stage_records(paths)
        from .start_point import look_ahead_to

        look = look_ahead_to(workflow, claimed.run, records, stage)
        if look.start is None or look.start[0] != stage:
            why = look.ended or (look.halt[1].reason if look.halt else None) or look.stop or "the workflow returned"
            raise Refusal(
                f"cannot check a value for stage {stage}: the workflow's code is not seen to reach it ({why}); "
                f"edit {paths.stage(stage)} by hand instead, and the next continue checks it"
            )
        schema = look.start_schema
        if schema is None:
            if value is not None:
                raise BadValue(stage, [f"stage {stage} declares no result, so its value can only be null"])
        else:
            _, problem = schema.load(value)
            if problem:
                raise BadValue(stage, problem.split("; "))
        old = digest(record.get("value"))
        # A stage that stopped or failed, given its value, is done: a continue reuses it.
        changed = {"outcome": "succeeded", "value": value, "summary": None, "reason": None, "error": None}
        new_record = cast(file_kinds.StageRecord, {**record, **changed, "ended": now_iso()})
        new_record["has_result"] = schema is not None
        line = entries.edited(stage=stage, by=_user(), old=old, new=digest(value))
        folder.set_stage_value(paths, new_record, line)
    finally:
        claimed.claim.release()
    names = list(records)
    after = [name for name in names[names.index(stage) + 1 :] if isinstance(records[name], dict)]
    return SetValue(stage, old, line["new"], after)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def computed_from_old(history: folder.History | None, records: StageRecords, from_stage: str | None) -> list[str]:
    """What a continue says of values set with awf set: the stages recorded after each one that
    were computed from its old value and are reused as they are, with the --from-stage that redoes
    them. Nothing when the continue redoes them anyway, or when no value was set."""
    if history is None or not history.has("edited"):
        return []
    edits: dict[str, int] = {}
    recorded: dict[str, int] = {}
    for line in history.lines(frozenset({"edited", "stage"})):
        if line.entry["kind"] == "edited":
            edits[line.entry["stage"]] = line.offset
        elif line.entry["kind"] == "stage":
            recorded[line.entry["stage"]] = line.offset  # each stage's last `stage` line
    names = list(records)
    said = []
    for stage, at in edits.items():
        if stage not in records or recorded.get(stage, -1) > at:
            continue  # recorded again since: the edit is no longer its current value
        later = [
            name
            for name in names[names.index(stage) + 1 :]
            if isinstance(record := records[name], dict)
            and record["outcome"] == "succeeded"
            and recorded.get(name, at) < at
        ]
        if from_stage is not None:
            # The redo runs its stage and those after it again; one not recorded is past them all.
            end = names.index(from_stage) if from_stage in records else -1
            later = [name for name in later if names.index(name) < end]
        if not later:
            continue
        one = len(later) == 1
        it_is = "it is" if one else "they are"
        said.append(
            f"stage {stage}'s value was set with awf set after {', '.join(later)} {'was' if one else 'were'} "
            f"computed from its old value; {it_is} reused as {it_is}: "
            f"to redo {'it' if one else 'them'} from the new value, go on with --from-stage {later[0]}"
        )
    return said
