"""One attempt of a run, from its claim to its ending: the order of things, each done elsewhere.

The claim (claim.py) makes a new run or claims the next attempt of one; the start point
(start_point.py) finds where it starts and looks ahead; the workflow runs once (drive.py); the
ending (ending.py) is decided and kept. Here: the attempt-start line, the attempt's state, the
folder it works in, and the claim given back whatever happens.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

from ..record import entries, folder
from ..record.clock import iso
from ..record.errors import RecordWriteError
from ..record.folder_lock import FolderLock
from ..record.liveness import process_start
from ..record.roots import root_problem, run_root_for
from . import agent_limits, attempt_agents, attempt_folder, attempt_outcome, budget
from . import from_stage as from_stage_rules
from .claim import Claimed, Identity, claim_continue, claim_unstarted, create, new_identity, working_folder
from .context import AttemptState, Context
from .cost_tally import CostTally
from .drive import Result, drive
from .ending import AttemptEnd, decide, write_ending
from .errors import Refusal
from .interrupted import name_interrupted, settle_leftovers
from .loader import load_workflow
from .observer import Observer
from .placement import placed_on
from .plan import StagePlan
from .request import RunRequest
from .start_point import Preview, Start, find_start, preview
from .values_file import read_values
from .workflow import Workflow


def run_attempt(request: RunRequest, observer: Observer) -> AttemptEnd | Preview:
    """Claim the run, run the workflow once, write its ending. Raises Refusal or LoadError.

    With `request.preview`, only look ahead and return what the attempt would do.
    """
    named = [("--from-stage", request.from_stage), ("--to-stage", request.to_stage)]
    for flag, name in [*named, *(("--skip-stage", skip) for skip in request.skip_stages)]:
        refusal = from_stage_rules.name_refusal(name, flag) if name is not None else None
        if refusal:
            raise Refusal(refusal)
    workflow = request.workflow or load_workflow(request.target)
    attempt = _Attempt(request, workflow, observer)
    try:
        return attempt.run()
    finally:
        attempt.give_back()


class _Attempt:
    """The attempt as it goes: what it was asked, the claim it holds once it holds one, its ending."""

    def __init__(self, request: RunRequest, workflow: Workflow[Any], observer: Observer) -> None:
        self.request = request
        self.workflow = workflow
        self.observer = observer
        self.claimed: Claimed | None = None
        self.ending: AttemptEnd | Preview | None = None
        self.folder_lock: FolderLock | None = None

    def run(self) -> AttemptEnd | Preview:
        request, workflow, observer = self.request, self.workflow, self.observer
        cwd = working_folder(request)
        root = run_root_for(cwd, request.run_root)
        problem = root_problem(root, given=request.run_root is not None)
        if problem:
            raise Refusal(problem)
        request.agent_limits = agent_limits.resolve(request.max_agents_text, root)
        values = read_values(request.values_file) if request.values_file is not None else None
        pending: Claimed | Identity  # a continue is claimed at once; a new run is made once it may start
        if request.resume:
            pending = self.claimed = claim_continue(request, workflow, root, cwd)
        else:
            pending = new_identity(request, workflow, root, cwd)
        run = pending.run
        if run.made_in is not None:
            observer.notice(f"this run was made in {run.made_in}; it works in {run.cwd}, where its record now is")
        records = folder.read_stage_records(run.paths) if request.resume else {}
        start = find_start(request, workflow, run, records, values)
        if request.preview:
            self.ending = preview(request, run, self.claimed, start)
            return self.ending
        if self.claimed is not None:
            settle_leftovers(request, self.claimed, observer)
            name_interrupted(run.history, observer, run.paths, request.from_stage, start.from_stage)
            from .set_value import computed_from_old  # deferred: only a run with a value set by hand says this

            for text in computed_from_old(run.history, records, start.from_stage):
                observer.notice(text)
        look = start.look
        if request.resume and request.from_stage and request.from_stage not in records and look and look.ended:
            observer.notice(
                f"--from-stage {request.from_stage}: this run has no record of that stage, and the look-ahead "
                f"cannot see whether the workflow reaches it ({look.ended}); the attempt stops if it never does"
            )

        def take_folder() -> None:
            if not run.share_folder:
                self.folder_lock = attempt_folder.take(run)

        if isinstance(pending, Claimed):
            take_folder()
            self.claimed = claimed = pending
        elif pending.unstarted:
            self.claimed = claimed = claim_unstarted(pending)
            take_folder()
        else:  # once the id is found free: two new runs on one id are refused as that, not as one folder
            self.claimed = claimed = create(pending, before=take_folder)
        self.ending = _run_claimed(request, workflow, claimed, observer, start)
        return self.ending

    def give_back(self) -> None:
        """The claim released, whatever happened; a pid file removed when no attempt ran; and a run
        with events woken if an event came while this attempt held it."""
        if self.folder_lock is not None:
            self.folder_lock.release()
        claimed = self.claimed
        if claimed is None:
            return
        if self.ending is None and not self.request.preview:
            folder.remove_pid(claimed.paths)  # refused after the claim: no attempt runs
        claimed.claim.release()
        if isinstance(self.ending, AttemptEnd) and self.workflow.events:
            # An event sent while this attempt worked found it live and did not wake the run.
            from .events import wakes

            wakes.after_attempt(claimed.paths)


def _run_claimed(
    request: RunRequest, workflow: Workflow[Any], claimed: Claimed, observer: Observer, start: Start
) -> AttemptEnd:
    run = claimed.run
    started = time.time()
    deadline = started + request.timeout if request.timeout else None
    if run.worktree is not None:
        # Before the attempt-start line: an attempt recorded as started found or made the worktree.
        start.preset = attempt_folder.ensure_worktree(request, run, observer) or start.preset
    max_cost = _begin(request, workflow, claimed, observer, start, deadline)
    observer.attempt_started(workflow.name, run.paths.id, run.attempt, run.paths.dir)
    for warning in request.warnings:
        observer.notice(warning)
    state = _state(workflow, claimed, observer, start, request)
    state.max_cost = max_cost
    state.agent_limits = request.agent_limits
    state.costs = CostTally(run.paths.log, run.history)
    attempt_agents.attach(state, cwd=run.cwd, deadline=deadline, sandbox=run.sandbox, source=workflow.source_file)
    if workflow.events:
        from .events import attempt as attempt_events

        attempt_events.attach(state, workflow, run.history)
    context = Context(state, run_id=run.paths.id, workflow=workflow.name, cwd=run.cwd)
    previous_cwd = Path.cwd()
    if start.preset is None:  # an attempt that stops at once may have no folder to work in (its branch gone)
        os.chdir(run.cwd)
    result: Result | None = None
    try:
        if start.preset is not None:
            ending = start.preset
            ending.record_dir, ending.workflow = run.paths.dir, workflow
        else:
            result = drive(workflow, context, state, run.args, deadline, request.timeout_said())
            ending = decide(request, workflow, state, result, run.history, start.from_stage)
    finally:
        attempt_agents.end(state)
        state.progress.close()
        os.chdir(previous_cwd)
    if ending.outcome == attempt_outcome.COMPLETED and state.agents is not None:
        attempt_agents.settle_unrecorded(run.paths, run.attempt, observer, own=True, history=run.history)
    if run.worktree is not None:
        ending.worktree = {"path": str(run.worktree.path), "branch": run.worktree.branch, "base": run.worktree.base}
    try:
        write_ending(request, workflow, state, ending, started, run.cwd)
    finally:
        state.costs.close()
    folder.remove_pid(run.paths)
    if result is not None and result.interruptions is not None:
        result.interruptions.restore()  # a caller in Python gets its own handlers back
    return ending


def _begin(
    request: RunRequest,
    workflow: Workflow[Any],
    claimed: Claimed,
    observer: Observer,
    start: Start,
    deadline: float | None,
) -> float | None:
    """The attempt-start line, and what it settles before any stage: the turns earlier attempts
    left unrecorded, and the redo of a run with events. Returns the attempt's --max-cost."""
    run = claimed.run
    events: dict[str, Any] = {}
    if workflow.events:
        from .events import attempt as attempt_events  # deferred, here and below: only a run with events needs it

        events["events"] = attempt_events.declared(workflow)
    try:
        max_cost = request.max_cost if request.max_cost is not None else budget.inherited(run.history)
        entries.append(
            run.paths.log,
            entries.attempt_start(
                attempt=run.attempt,
                pid=os.getpid(),
                process_start=process_start(os.getpid()),
                host=socket.gethostname(),
                **placed_on(),
                file=str(Path(request.target).absolute()),
                workflow_version=workflow.version,
                flags={
                    "continue": request.resume,
                    "from_stage": start.from_stage,
                    "to_stage": request.to_stage,
                    "skip_stage": list(request.skip_stages) or None,
                    "values": str(request.values_file) if request.values_file else None,
                    "timeout": request.timeout_text,
                    "max_cost": request.max_cost_text,
                },
                max_cost=max_cost,
                deadline=iso(deadline) if deadline else None,
                sandbox=run.sandbox.as_record() if run.sandbox is not None else None,
                **events,
            ),
        )
        if run.history is not None:
            attempt_agents.settle_unrecorded(run.paths, run.attempt, observer, history=run.history)
        if workflow.events and request.from_stage:
            from .events import attempt as attempt_events

            attempt_events.record_redo(run.paths, run.attempt, request.from_stage)
    except RecordWriteError:
        folder.remove_pid(run.paths)  # nothing ran; the log keeps what it took
        raise
    return max_cost


def _state(
    workflow: Workflow[Any], claimed: Claimed, observer: Observer, start: Start, request: RunRequest
) -> AttemptState:
    """The attempt's state: its stage plan from the start point, and the stages interrupted attempts
    were in."""
    run = claimed.run
    history = run.history
    plan = StagePlan(
        start.records,
        workflow.version,
        start.from_stage,
        dict(start.values or {}),
        events=bool(workflow.events),
        redo=start.mark,
        to_stage=request.to_stage,
        skip=frozenset(request.skip_stages),
        interrupted_in={
            attempt.open_stage: attempt.number
            for attempt in (history.attempts if history else [])
            if attempt.end is None and attempt.open_stage and not attempt.is_live()
        },
    )
    return AttemptState(
        paths=run.paths,
        attempt=run.attempt,
        plan=plan,
        observer=observer,
        workflow_version=workflow.version,
        schema_base=workflow.base_dir,
    )
