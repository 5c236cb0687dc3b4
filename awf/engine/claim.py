"""The claim of an attempt: a new run made, or the next attempt of a run claimed, and the
refusals that say why an attempt cannot be made and what to do instead."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..record import entries, folder, layout, trace_ids
from ..record.clock import age, now_iso
from ..record.entries import Args
from ..record.errors import RecordError, RecordWriteError
from ..record.file_kinds import StageRecord
from ..record.inbox import read_events
from ..record.layout import RunPaths, WorkingFolder
from ..record.names import id_problem
from ..record.roots import run_root_for
from . import attempt_outcome, attempt_sandbox
from .durations import format_duration
from .errors import Refusal
from .loader import load_workflow
from .placement import placed_on
from .request import RunRequest
from .values_file import read_values
from .workflow import Workflow

if TYPE_CHECKING:  # the worktree module is imported by the runs that have one
    from .worktree import Worktree


@dataclass
class Run:
    """The run an attempt is for, as it is before and after the claim."""

    paths: RunPaths
    args: Args  # the workflow's arguments
    cwd: Path  # the folder the run works in
    attempt: int  # the number of the attempt to be made
    history: folder.History | None  # the run's history as the claim read it; None for a new run
    sandbox: Any = None  # the run's sandbox profile, or None
    worktree: Worktree | None = None  # the run's own git worktree, which `cwd` is in
    share_folder: bool = False  # its attempts work beside other runs' in one folder
    made_in: Path | None = None  # where the run was made, when its record moved and it works in `cwd` instead


@dataclass
class Identity:
    """A new run, checked and not yet made: the run and the fields of its `run` line."""

    run: Run
    run_fields: entries.RunFields
    # Its id names a run that a crash left made by this same command and never started: the
    # command run again takes that run for its first attempt (claim_unstarted) instead of making it.
    unstarted: bool = False


@dataclass
class Claimed:
    """A run whose attempt this process holds: its lock is taken and its pid file written."""

    run: Run
    claim: folder.AttemptClaim

    @property
    def paths(self) -> RunPaths:
        return self.run.paths


def generated_id() -> str:
    """Local time and four hex digits: 20261004-1532-a7f3."""
    # os.urandom is what secrets.token_hex reads, without secrets' imports (hashlib, random).
    return f"{datetime.now():%Y%m%d-%H%M}-{os.urandom(2).hex()}"


def prepare_elsewhere(request: RunRequest) -> tuple[RunPaths, Path]:
    """Ready the run for an attempt that another process will make, maybe on another machine:
    a new run is made (its `run` line, no attempt yet), a continue is checked as it would be here.

    Returns the run's paths and the folder it works in; holds no claim once it returns. Raises
    Refusal as an attempt here would, before anything is placed.
    """
    workflow = request.workflow or load_workflow(request.target)
    cwd = working_folder(request)
    root = run_root_for(cwd, request.run_root)
    if request.values_file is not None:
        read_values(request.values_file)  # a values file that cannot be used is refused here, not on a node
    if request.resume:
        claimed = claim_continue(request, workflow, root, cwd)
    else:
        identity = new_identity(request, workflow, root, cwd)
        claimed = claim_unstarted(identity) if identity.unstarted else create(identity)
    claimed.claim.release()
    worktree = claimed.run.worktree
    # A new run's worktree is made by its first attempt: the process starts where it was started.
    return claimed.paths, worktree.repository if worktree is not None else claimed.run.cwd


def working_folder(request: RunRequest) -> Path:
    """The folder the run works in: --cwd, checked, else the current one."""
    if request.cwd is None:
        return Path.cwd()
    cwd = request.cwd.expanduser().absolute()
    if not cwd.is_dir():
        raise Refusal(f"--cwd {request.cwd} is not a folder")
    return cwd


def _prepare(workflow: Workflow[Any], argv: list[str]) -> Args:
    try:
        return workflow.prepare_args(argv)
    except Exception as error:
        raise Refusal(f"prepare refused the arguments {argv}: {type(error).__name__}: {error}") from None


def _id_from_args(workflow: Workflow[Any], args: Args, argv: list[str]) -> str | None:
    """The run's id from the workflow's id(args), checked: a refusal says which function gave it."""
    given = json.dumps(argv, ensure_ascii=False)
    go_on = "give --id, or the arguments the workflow's prepare expects"
    try:
        run_id = workflow.run_id_for(args)
    except Exception as error:
        raise Refusal(f"id(args) failed for argv {given}: {type(error).__name__}: {error}; {go_on}") from None
    if run_id is None:
        return None
    if run_id == "":
        raise Refusal(f'id(args) returned "" for argv {given}; {go_on}')
    problem = id_problem(run_id, "run id")
    if problem:
        raise Refusal(f"id(args) returned {run_id!r} for argv {given}: {problem}; {go_on}")
    return run_id


def new_identity(request: RunRequest, workflow: Workflow[Any], root: Path, cwd: Path) -> Identity:
    """The new run the request names, checked, before anything is written: its id, its arguments and its run line."""
    argv = request.argv or []
    args = dict(request.args) if request.args is not None else _prepare(workflow, argv)
    run_id = _new_id(request, workflow, args, argv)
    paths = RunPaths(root, workflow.name, run_id)
    worktree = None
    if request.worktree or workflow.worktree:
        from . import worktree as worktrees

        worktree, cwd = worktrees.planned(cwd, workflow.name, run_id, request.base)
    elif request.base is not None:
        raise Refusal("--base goes only with --worktree: it names the commit the run's branch is made from")
    share_folder = request.share_folder or workflow.shares_folder
    sandbox = attempt_sandbox.requested(request.sandbox, cwd, worktree.path if worktree is not None else None)
    run = Run(paths, args, cwd, 1, None, sandbox, worktree, share_folder)
    run_fields = _run_fields(request, workflow, run)
    if request.preview:
        return Identity(run, run_fields)
    try:
        # Early, before any look-ahead; again, race-free, as the folder is made.
        folder.refuse_if_taken(paths, locked=False)
    except folder.Refused as refused:
        if _unstarted_history(paths, run_fields) is None:
            raise Refusal(str(refused)) from None
        return Identity(run, run_fields, unstarted=True)
    return Identity(run, run_fields)


def _new_id(request: RunRequest, workflow: Workflow[Any], args: Args, argv: list[str]) -> str:
    """A new run's id, checked: --id, else the workflow's id(args), else a generated one."""
    run_id = request.run_id
    if run_id is None:
        run_id = _id_from_args(workflow, args, argv)
    if run_id is None:
        run_id = generated_id()
    problem = id_problem(run_id, "run id")
    if problem:
        raise Refusal(problem)
    return run_id


def _run_fields(request: RunRequest, workflow: Workflow[Any], run: Run) -> entries.RunFields:
    """The `run` line of a new run."""
    fields: entries.RunFields = {
        "workflow": workflow.name,
        "id": run.paths.id,
        "argv": request.argv or [],
        "cwd": str(run.cwd),
        "sandbox": run.sandbox.as_record() if run.sandbox is not None else None,
        "file": str(Path(request.target).absolute()),
        "workflow_version": workflow.version,
    }
    relative = layout.relative_cwd(run.cwd, run.paths.root) if run.worktree is None else None
    if relative is not None:
        fields["cwd_relative"] = relative
    if run.worktree is not None:
        fields["worktree"] = run.worktree.as_record()
    if run.share_folder:
        fields["share_folder"] = True
    if workflow.events:
        from .events import attempt as attempt_events

        fields["events"] = attempt_events.declared(workflow)
    if request.args is not None:
        fields["args"] = dict(request.args)  # given whole by a caller in Python; prepare was not called
    # Recorded whether or not this attempt exports spans: a later one that does joins the same trace.
    trace = trace_ids.new_run_trace(workflow.name, run.paths.id, now_iso(), os.environ)
    fields["trace_id"] = trace["trace_id"]
    if "trace_parent" in trace:
        fields["trace_parent"] = trace["trace_parent"]
    return fields


# What a new run's command fixes for the run's life: the same command run again has the same.
_FIXED = ("workflow", "argv", "cwd", "cwd_relative", "sandbox", "worktree", "share_folder", "events", "args")


def _unstarted_history(paths: RunPaths, run_fields: entries.RunFields) -> folder.History | None:
    """The history of the run at `paths` when it is only a `run` line the same command would write:
    the command made it and was killed before its first attempt started. None otherwise."""
    if paths.dir.is_symlink() or not paths.log.is_file():
        return None
    try:
        history = folder.read_history(paths, ended_stages=False)
    except RecordError:
        return None  # refused as any run that exists; a continue names what is wrong with it
    if history.attempts or history.queued is not None:
        return None
    made: dict[str, Any] = dict(run_fields)
    if any(history.run.get(key) != made.get(key) for key in _FIXED):
        return None
    return history


def claim_unstarted(identity: Identity) -> Claimed:
    """The run a crash left made and never started, claimed for its first attempt by the command
    that made it, run again: the command goes on as it would have, with its --from-stage and --values."""
    paths = identity.run.paths
    try:
        claim = folder.claim_existing(paths)
    except folder.Refused as refused:
        raise Refusal(str(refused)) from None
    try:
        # Read again under the claim: an attempt may have started it since it was first read.
        history = _unstarted_history(paths, identity.run_fields)
        if history is None:
            raise Refusal(f"run {paths.name} exists; continue it with --id {paths.id} --continue, or pick another id")
        folder.clear_leftovers(paths)
        folder.write_pid(paths, 1)
    except BaseException:
        claim.release()
        raise
    identity.run.history = history
    return Claimed(identity.run, claim)


def create(identity: Identity, before: Callable[[], None] | None = None) -> Claimed:
    """The new run made (its folder and its run line) and its first attempt claimed; `before`
    runs once its id is found free, before anything is made."""
    try:
        claim = folder.create_run(identity.run.paths, identity.run_fields, before)
    except folder.Refused as refused:
        raise Refusal(str(refused)) from None
    except RecordWriteError as error:
        if error.errno == errno.ENOTDIR:  # a file where a folder of the run root goes: a path given wrong
            raise Refusal(f"{error.path} is a file, not a folder; give a folder for the runs") from None
        raise
    return Claimed(identity.run, claim)


def claim_continue(request: RunRequest, workflow: Workflow[Any], root: Path, cwd: Path) -> Claimed:
    """The next attempt of the run --id names, claimed; Refusal, saying why and what to do, when it cannot be."""
    paths = RunPaths(root, workflow.name, _continued_id(request, workflow))
    folder.refuse_links(paths)  # before anything is read through a link
    if paths.dir.exists() and not paths.dir.is_dir():
        raise Refusal(
            f"{paths.dir} is a file, where run {paths.name} keeps its folder; move it away, or give another id"
        )
    if not paths.log.exists():
        raise Refusal(_no_such_run(paths))
    try:
        claim = folder.claim_existing(paths)
    except folder.Refused as refused:
        raise Refusal(str(refused)) from None
    try:
        run = _continued_run(request, workflow, paths, cwd)
    except (RecordError, Refusal):
        claim.release()
        raise  # a record that cannot be read: exit 3, naming the file
    if not request.preview:
        try:
            folder.clear_leftovers(paths)
            # At once, so a continue or a new run refused meanwhile names this attempt and its pid.
            folder.write_pid(paths, run.attempt)
        except BaseException:
            claim.release()
            raise
    return Claimed(run, claim)


def _continued_id(request: RunRequest, workflow: Workflow[Any]) -> str:
    """The id of the run a continue names: --id, or the workflow's id(args) of the arguments given."""
    run_id = request.run_id
    if run_id is None and request.argv is not None and workflow.id is not None:
        run_id = _id_from_args(workflow, _prepare(workflow, request.argv), request.argv)
    if run_id is None:
        raise Refusal("--continue needs the run's --id")
    problem = id_problem(run_id, "run id")
    if problem:
        raise Refusal(problem)
    return run_id


def _refuse_unqueued(paths: RunPaths, history: folder.History) -> None:
    """An attempt awf serve starts from its queue begins only while its `queued` line still waits:
    not once awf cancel withdrew it, nor a second time after it began."""
    placed = placed_on().get("placed")
    waiting = history.queued
    if placed is None or placed["on"] != "serve":
        if waiting is not None and waiting.get("on") == "serve":
            # Otherwise serve would start the queued attempt after this one: two attempts unasked.
            raise Refusal(
                f"an attempt of {paths.name} waits in awf serve's queue already: "
                f"withdraw it first (awf cancel {paths.name}), or let awf serve start it"
            )
        return
    if waiting is None or waiting.get("token") != placed.get("token"):
        raise Refusal(f"the queued attempt of {paths.name} was withdrawn or has started already; nothing was started")


def _continued_run(request: RunRequest, workflow: Workflow[Any], paths: RunPaths, cwd: Path) -> Run:
    """The run as its history has it, once the continue is found to fit it: the same arguments and
    folder, a sandbox it keeps, and an ending that leaves something to do."""
    history = folder.read_history(paths, ended_stages=False)
    _refuse_unqueued(paths, history)
    recorded_argv = history.run["argv"]
    if request.argv is not None and request.argv != recorded_argv:
        raise Refusal(
            f"run {paths.name} was started with the arguments {recorded_argv}, not {request.argv}: "
            "different input is a different run; drop them to continue, or start a new run"
        )
    where = layout.working_folder(history.run, paths.root)
    recorded_cwd = _kept_folder(request, where, paths, cwd)
    made_in = where.recorded if recorded_cwd != where.recorded else None
    if made_in is not None and history.run.get("sandbox") is not None:
        # Its profile names the folders agents may touch by their absolute paths, in the old place.
        raise Refusal(
            f"run {paths.name} was made in {made_in} with a sandbox whose folders are there, and its record is now "
            f"under {recorded_cwd}:\ncontinue it there with --cwd {made_in} --run-root {paths.root}, or start a new run"
        )
    worktree = _kept_worktree(request, history.run, paths.name, recorded_cwd)
    first = history.attempts[0].start if history.attempts else None
    sandbox = attempt_sandbox.kept(request.sandbox, history.run.get("sandbox"), recorded_cwd, paths.name, first)
    try:
        args = dict(request.args) if request.args is not None else workflow.prepare_args(recorded_argv)
    except Exception as error:
        raise Refusal(
            f"prepare no longer accepts the run's recorded arguments {recorded_argv} "
            f"({type(error).__name__}: {error}); start a new run"
        ) from None
    last = history.last
    if last is not None and last.status == attempt_outcome.COMPLETED and request.from_stage is None:
        raise Refusal(_completed_text(paths, request))
    if worktree is None and not recorded_cwd.is_dir():  # a worktree is made again as the attempt starts
        raise Refusal(f"run {paths.name} works in {recorded_cwd}, which is no longer a folder")
    if "events" in history.run:
        read_events(paths)  # an inbox that cannot be read is found now, before anything is recorded
    number = (last.number if last else 0) + 1
    share_folder = bool(history.run.get("share_folder")) or request.share_folder or workflow.shares_folder
    return Run(paths, args, recorded_cwd, number, history, sandbox, worktree, share_folder, made_in)


def _kept_folder(request: RunRequest, where: WorkingFolder, paths: RunPaths, cwd: Path) -> Path:
    """The folder a continue works in: where the run line says, or the same place in the folder its
    record moved or was copied with; --cwd picks one of those two when the record cannot tell."""
    if request.cwd is not None:
        if cwd == where.recorded:
            return where.recorded
        if where.moved is not None and cwd == where.moved:
            return where.moved
        also = f" or {where.moved}" if where.moved is not None else ""
        raise Refusal(f"run {paths.name} works in {where.recorded}{also}, not {cwd}: a continue keeps the run's --cwd")
    if where.moved is not None and not where.certain:
        here = f"--cwd {where.moved} to work where its record is"
        if not where.recorded.is_dir():
            raise Refusal(
                f"run {paths.name} was made in {where.recorded}, which is no longer a folder, and its record is "
                f"now under {where.moved}:\ngive {here}"
            )
        raise Refusal(
            f"run {paths.name} was made in {where.recorded}, and its record is now under {where.moved}, "
            f"another folder:\ngive {here}, or --cwd {where.recorded} --run-root {paths.root} to work where it was made"
        )
    return where.now


def _kept_worktree(request: RunRequest, run_line: entries.RunLine, name: str, cwd: Path) -> Worktree | None:
    """The run's worktree, which a continue keeps: --worktree again is allowed, another --base refused."""
    recorded = run_line.get("worktree")
    if recorded is None:
        if request.worktree or request.base is not None:
            flag = "--worktree" if request.worktree else "--base"
            raise Refusal(
                f"run {name} works in {cwd}, not in a worktree of its own: {flag} is for a new run; "
                f"drop it to continue, or start a new run with --worktree"
            )
        return None
    from . import worktree as worktrees

    worktree = worktrees.Worktree.from_record(recorded)
    worktrees.kept(worktree, request.base, name)
    return worktree


def _no_such_run(paths: RunPaths) -> str:
    text = f"there is no run {paths.name}: looked in {paths.workflow_dir}"
    try:
        others = sorted(
            name
            for name in os.listdir(paths.root)
            if name != paths.workflow and (paths.root / name / paths.id / "run.jsonl").exists()
        )
    except FileNotFoundError:
        others = []
    if others:
        text += f"; the id {paths.id} belongs to a run of {', '.join(others)}: continue it with that workflow's file"
    else:
        text += " (a continue looks under --cwd, or the current folder, or --run-root)"
    return text


def _completed_text(paths: RunPaths, request: RunRequest) -> str:
    records = folder.read_stage_records(paths)
    lines = [f"run {paths.name} completed; a continue of a completed run redoes nothing, so it is refused."]
    if records:
        lines.append("Redo from one of its recorded stages with --from-stage:")
        width = max(len(name) for name in records)
        for name, record in records.items():
            if isinstance(record, RecordError):
                lines.append(f"  {name:<{width}}  its record {record.path} {record.problem}")
                continue
            lines.append(f"  {name:<{width}}  {_ran_text(record)}")
        first = next(iter(records))
        lines.append(f"  e.g. {request.go_on(paths.id, from_stage=first)}")
    return "\n".join(lines)


def _ran_text(record: StageRecord) -> str:
    seconds = age(record.get("ended"))
    ago = f", {format_duration(seconds)} ago" if seconds is not None else ""
    return f"{record['outcome']} in attempt {record['attempt']}{ago}"
