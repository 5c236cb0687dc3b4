"""A fork: a new run of the same workflow whose record starts with another run's stage records.

The source run is only read: its current records (each file is replaced whole, so one read sees
a whole record even while an attempt of the source runs) and its `run` line. The fork gets the
source's arguments, folder and sandbox, a copy of each succeeded record before the stage named
(all of them when none is), each marked with the run and attempt that wrote it, and no attempt:
its first attempt is a continue, which reuses the copies and runs the rest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..record import entries, file_kinds, folder, trace_ids
from ..record.clock import now_iso
from ..record.errors import RecordError
from ..record.file_kinds import StageRecord, StageRecords
from ..record.layout import RunPaths
from ..record.names import id_problem, stage_name_problem
from .errors import Refusal
from .worktree import Worktree

# A fork's default id: the source's, then `-fork-` and the first number no run of the workflow has.
FORK_SUFFIX = "-fork-"


@dataclass
class Forked:
    """The fork made: where it is, what it copied, and the source's workflow file."""

    paths: RunPaths
    source: RunPaths
    from_stage: str | None
    copied: list[str]
    file: str | None
    worktree: Worktree | None


def fork(source: RunPaths, *, new_id: str | None, from_stage: str | None) -> Forked:
    """Make the fork of `source`, or raise Refusal (nothing made) naming what is wrong."""
    if from_stage is not None:
        problem = stage_name_problem(from_stage)
        if problem:
            raise Refusal(f"--from-stage {from_stage}: {problem}")
    history = folder.read_history(source, ended_stages=False)
    records = folder.read_stage_records(source)
    copied = _records_before(source, records, from_stage)
    if new_id is not None:
        problem = id_problem(new_id, "run id")
        if problem:
            raise Refusal(f"--id {new_id}: {problem}")
    paths = RunPaths(source.root, source.workflow, new_id or _free_id(source))
    fields, worktree = _run_fields(source, paths, history.run, from_stage)
    marked = [_marked(source, record) for record in copied]
    try:
        folder.create_fork(paths, fields, marked)
    except folder.Refused as refused:
        raise Refusal(str(refused)) from None
    file = history.run.get("file")
    return Forked(paths, source, from_stage, [r["stage"] for r in marked], file, worktree)


def _records_before(source: RunPaths, records: StageRecords, from_stage: str | None) -> list[StageRecord]:
    """The succeeded records recorded before `from_stage` (all of them when None), in the order
    the source recorded them; Refusal for a stage it has no record of, or an unreadable record
    among them."""
    names = list(records)
    if from_stage is not None and from_stage not in records:
        recorded = ", ".join(names) or "none"
        raise Refusal(
            f"run {source.name} has no record of stage {from_stage} to fork from; its recorded stages: {recorded}"
        )
    before = names[: names.index(from_stage)] if from_stage is not None else names
    kept = []
    for name in before:
        record = records[name]
        if isinstance(record, RecordError):
            raise Refusal(f"stage {name}'s record cannot be read: {record}; fix it, or fork from --from-stage {name}")
        if record["outcome"] == "succeeded":
            kept.append(record)
    return kept


def _free_id(source: RunPaths) -> str:
    """`{id}-fork-1`, or the next number not taken (by a run, in any case, or a folder)."""
    taken = set()
    try:
        taken = {name.casefold() for name in os.listdir(source.workflow_dir)}
    except OSError:
        pass
    number = 1
    while f"{source.id}{FORK_SUFFIX}{number}".casefold() in taken:
        number += 1
    new_id = f"{source.id}{FORK_SUFFIX}{number}"
    problem = id_problem(new_id, "run id")
    if problem:
        raise Refusal(f"the fork's id {new_id} cannot be used ({problem}); give one with --id")
    return new_id


def _marked(source: RunPaths, record: file_kinds.StageRecord) -> file_kinds.StageRecord:
    """The record as the fork holds it: the same, marked with the run and attempt that wrote it."""
    copy = cast(file_kinds.StageRecord, dict(record))
    # A record the source had itself copied keeps where it first came from.
    copy.setdefault("forked_from", {"run": source.name, "attempt": int(record["attempt"])})
    return copy


# The fields of the source's run line a fork keeps as they are: what fixes a run for its life.
_KEPT = ("argv", "cwd", "cwd_relative", "sandbox", "file", "workflow_version", "args", "events", "share_folder")


def _run_fields(
    source: RunPaths, paths: RunPaths, run_line: entries.RunLine, from_stage: str | None
) -> tuple[entries.RunFields, Worktree | None]:
    fields = cast(entries.RunFields, {"workflow": paths.workflow, "id": paths.id})
    for key in _KEPT:
        if key in run_line:
            fields[key] = run_line[key]  # type: ignore[literal-required]
    fields["forked_from"] = {"run": source.name, "stage": from_stage}
    fields["trace_id"] = trace_ids.derived_trace_id(paths.workflow, paths.id, now_iso())  # a trace of its own
    recorded = run_line.get("worktree")
    if recorded is None:
        return fields, None
    worktree = _forked_worktree(source, paths, Worktree.from_record(recorded))
    fields["worktree"] = worktree.as_record()
    try:
        here = Path(run_line["cwd"]).relative_to(Path(recorded["path"]))
    except ValueError:
        here = Path()
    fields["cwd"] = str(worktree.path / here)
    return fields, worktree


def _forked_worktree(source: RunPaths, paths: RunPaths, of: Worktree) -> Worktree:
    """The fork's own worktree, planned: a new branch from the commit the source's branch is at
    now. Nothing is made here; the fork's first attempt makes the branch and the worktree."""
    from . import worktree as worktrees

    commit = worktrees.commit_of(of.repository, f"refs/heads/{of.branch}")
    if not commit:
        raise Refusal(
            f"run {source.name}'s branch {of.branch} is gone, and a fork's worktree starts from it: "
            f"make it again (git branch {of.branch} COMMIT), or fork a run whose branch is there"
        )
    path = of.repository / worktrees.WORKTREES_DIR / paths.workflow / paths.id
    branch = f"awf/{paths.workflow}/{paths.id}"
    if worktrees.branch_exists(of.repository, branch):
        raise Refusal(
            f"the branch {branch} exists already, from an earlier run of that id: "
            f"delete it (git branch -D {branch}) or give another --id"
        )
    if os.path.lexists(path):
        raise Refusal(f"{path} exists already, where the fork's worktree goes: move it away, or give another --id")
    return Worktree(of.repository, path, branch, commit, of.branch)
