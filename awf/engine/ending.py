"""How an attempt ends: the AttemptEnd decided from how the workflow's run came out, and kept as
out.json and the attempt-end line with the closing facts (the stages, the cost, the report)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..record import entries, file_kinds, folder
from ..record.clock import iso, now_iso
from ..record.costs import TurnCost
from ..record.errors import RecordError, RecordWriteError
from ..record.file_kinds import RetryFields, WaitFields
from ..record.schemas import JsonSchema
from . import attempt_outcome
from . import from_stage as from_stage_rules
from .context import AttemptState
from .drive import Result
from .errors import MissingPackage, Park, PlanStop, StageValueError, Stop, StopAfter, WorkflowError, stage_of
from .fan_out import fan_out_note
from .frames import user_traceback
from .request import RunRequest
from .schema import json_problem
from .workflow import Workflow

if TYPE_CHECKING:
    from .report import Written


@dataclass
class AttemptEnd:
    """How an attempt ended: what the CLI prints and what out.json holds."""

    outcome: str
    exit_code: int
    out: dict[str, Any]
    out_text: str | None = None  # out.json's text as written, while `out` still holds what it does
    stage: str | None = None
    reason: str | None = None
    go_on: str | None = None
    record_dir: Path | None = None
    detail: str | None = None  # a traceback worth showing
    hints: list[str] = field(default_factory=list)
    error: str | None = None  # an `awf:` line for the CLI: what to install, when a package is missing
    value: Any = None  # what the workflow returned, as it returned it
    plain: Any = None  # the same as plain JSON: what out.json holds
    workflow: Workflow[Any] | None = None
    needs: dict[str, JsonSchema] | None = None  # for a start part-way: each stage's result schema
    waits: list[WaitFields] | None = None  # what a parked attempt waits for
    write_error: RecordWriteError | None = None  # a file of the record that could not be written
    worktree: file_kinds.OutWorktree | None = None  # the run's own worktree: where to look at its work
    costs: list[TurnCost] | None = None  # each turn's cost, for the closing block
    retry: RetryFields | None = None  # a stop worth retrying: when awf serve continues the run


def decide(
    request: RunRequest,
    workflow: Workflow[Any],
    state: AttemptState,
    result: Result,
    history: folder.History | None,
    from_stage: str | None,
) -> AttemptEnd:
    """How the attempt ends, from how the workflow's run came out."""
    make = _Make(request, workflow, state, result.signal, from_stage)
    if result.signal:
        return make.ending(attempt_outcome.CANCELLED, stage=_open_stage(state, result), reason=state.cancel_reason)
    if result.timed_out:
        return make.ending(attempt_outcome.TIMED_OUT, stage=_open_stage(state, result), reason=state.cancel_reason)
    if result.error is None:
        return _returned(make, result.value)
    return _raised(make, result.error, history)


class _Make:
    """Makes the attempt's AttemptEnd of an outcome, with the command that goes on from it."""

    def __init__(
        self,
        request: RunRequest,
        workflow: Workflow[Any],
        state: AttemptState,
        signal_number: int | None,
        from_stage: str | None,
    ) -> None:
        self.request = request
        self.workflow = workflow
        self.state = state
        self.signal_number = signal_number
        self.from_stage = from_stage

    def ending(
        self,
        outcome: str,
        *,
        stage: str | None = None,
        reason: str | None = None,
        redo: str | None = None,
        detail: str | None = None,
        hints: list[str] | None = None,
        value: Any = None,
    ) -> AttemptEnd:
        state = self.state
        code = attempt_outcome.exit_code(outcome, self.signal_number)
        go_on = None
        if outcome != attempt_outcome.COMPLETED:
            redo = redo or (self.from_stage if not state.plan.reached else None)
            go_on = self.request.go_on(state.paths.id, from_stage=redo, max_cost=state.raise_budget)
        return AttemptEnd(
            outcome,
            code,
            {},
            stage=stage,
            reason=reason,
            go_on=go_on,
            record_dir=state.paths.dir,
            detail=detail,
            hints=hints or [],
            value=value,
            workflow=self.workflow,
        )


def _returned(make: _Make, value: Any) -> AttemptEnd:
    """The ending of a workflow that returned: completed, unless it never reached its start point
    or swallowed a stop, or returned what out.json cannot hold."""
    state, from_stage, plan = make.state, make.from_stage, make.state.plan
    if state.pending_stop is not None:
        stop = state.pending_stop
        return make.ending(
            attempt_outcome.FAILED,
            reason=f"stop was caught: {stop.reason!r} was raised by wf.stop and then dropped; let it propagate",
        )
    if from_stage and not plan.reached:
        missed = from_stage_rules.never_reached(from_stage, plan.records, plan.entered)
        ending = make.ending(attempt_outcome.STOPPED, reason=missed.reason, redo=missed.redo, hints=missed.hints)
        if missed.redo is None:
            ending.go_on = None
        return ending
    plain, problem = _plain(value)
    if problem:
        return make.ending(
            attempt_outcome.FAILED, reason=f"the workflow returned a value out.json cannot hold: {problem}"
        )
    if plan.to_stage and plan.to_stage not in plan.entered_names:
        # Nothing came after it to hold back: the run's work is done, so the attempt completes.
        state.observer.notice(
            f"--to-stage {plan.to_stage}: the workflow returned without entering it (a branch not taken); "
            "every stage it entered has run"
        )
    ending = make.ending(attempt_outcome.COMPLETED, value=value)
    ending.plain = plain
    return ending


def _raised(make: _Make, error: BaseException, history: folder.History | None) -> AttemptEnd:
    """The ending of a workflow that raised: parked, stopped, or failed, saying where and why; for
    the first failure of a fan-out, how its other branches ended."""
    ending = _raised_alone(make, error, history)
    note = fan_out_note(error)
    if note and ending.reason:
        ending.reason = f"{ending.reason}\n{note}"
    return ending


def _raised_alone(make: _Make, error: BaseException, history: folder.History | None) -> AttemptEnd:
    if isinstance(error, Park):
        return _parked(make, error)
    if isinstance(error, StopAfter):
        # Between stages, after the one --to-stage names: a plain continue goes on after it.
        return make.ending(attempt_outcome.STOPPED, reason=error.reason, redo=None)
    if isinstance(error, Stop):
        redo = error.redo
        hints: list[str] = []
        if error.stage is None and not isinstance(error, PlanStop) and error.retry_after is None:
            repeated = _repeated_stop(make.state, history)
            if repeated:
                redo = redo or repeated[0]
                hints.append(repeated[1])
        ending = make.ending(attempt_outcome.STOPPED, stage=error.stage, reason=error.reason, redo=redo, hints=hints)
        if error.retry_after is not None:
            _retried(ending, error, history)
        return ending
    stage = stage_of(error)
    if isinstance(error, RecordWriteError):
        ending = make.ending(attempt_outcome.FAILED, stage=stage, reason=str(error))
        ending.write_error = error
        return ending
    if isinstance(error, asyncio.CancelledError):
        return make.ending(attempt_outcome.FAILED, stage=stage, reason="the workflow was cancelled from within")
    if isinstance(error, RecordError):  # awf's own read of the record, not the workflow's code
        return make.ending(attempt_outcome.FAILED, stage=stage, reason=f"the run's record cannot be read: {error}")
    if isinstance(error, (WorkflowError, StageValueError)):
        ending = make.ending(attempt_outcome.FAILED, stage=stage, reason=str(error))
        ending.error = error.install if isinstance(error, MissingPackage) else None
        return ending
    # The person is shown their own frames; the stage's record keeps the whole traceback.
    detail = user_traceback(error)
    return make.ending(attempt_outcome.FAILED, stage=stage, reason=f"{type(error).__name__}: {error}", detail=detail)


def _retried(ending: AttemptEnd, stop: Stop, history: folder.History | None) -> None:
    """A stop worth retrying: when awf serve continues the run, or that it has had its retries."""
    from .events.retries import schedule

    retry, before = schedule(stop, history, time.time())
    if retry is None:
        ending.hints.append(
            f"not retried: the run has stopped with a retry {before} times in a row, the most retries={stop.retries} "
            "allows; go on when what it waits for is fixed"
        )
        return
    ending.retry = retry


def write_ending(
    request: RunRequest, workflow: Workflow[Any], state: AttemptState, ending: AttemptEnd, started: float, cwd: Path
) -> None:
    """The ending kept: the workflow's report, out.json and the attempt-end line. A file the record
    cannot take makes the ending failed, saying which file and why."""
    paths = state.paths
    out = _out(workflow, state, ending, started)
    try:
        if workflow.report is not None:
            written = _report(workflow, ending, state, cwd)
            out["report"] = str(written.path) if written.path else None
            if written.error:
                out["report_error"] = written.error
        elif paths.report.exists():
            folder.write_report(paths, None)  # an earlier attempt's; its text is in run.jsonl
        ending.out_text = folder.write_out(paths, out)
    except RecordWriteError as error:
        ending.write_error = ending.write_error or error
    if ending.write_error is not None:
        _failed_by_the_record(request, ending, out)
        ending.out_text = None  # out changed since it was written, if it was
    ending.out = {**out}
    end_line = entries.attempt_end(
        attempt=state.attempt,
        outcome=ending.outcome,
        exit_code=ending.exit_code,
        stage=ending.stage,
        reason=ending.reason,
        after=state.last_stage,
        ran=state.ran,
        go_on=ending.go_on,
    )
    if ending.waits is not None:
        end_line["waits"] = ending.waits
    if ending.retry is not None:
        end_line["retry"] = ending.retry
    try:
        entries.append(paths.log, end_line)
    except RecordWriteError as error:
        # The run reads interrupted, and the attempt says so: failed, exit 1, the awf: line naming
        # the log; never the outcome the log could not take. out.json follows if it still can.
        if ending.write_error is None:
            ending.write_error = error
            _failed_by_the_record(request, ending, out)
            ending.out, ending.out_text = {**out}, None
            try:
                ending.out_text = folder.write_out(paths, out)
            except RecordWriteError:
                pass  # the log's error is the one told


def _failed_by_the_record(request: RunRequest, ending: AttemptEnd, out: file_kinds.OutRecord) -> None:
    """What the record could not take is the attempt's ending: failed, saying which file and why."""
    assert ending.write_error is not None
    ending.outcome, ending.exit_code = attempt_outcome.FAILED, attempt_outcome.exit_code(attempt_outcome.FAILED)
    ending.reason = str(ending.write_error)
    ending.go_on = ending.go_on or request.go_on(out["id"])
    out.update(
        {"outcome": ending.outcome, "exit_code": ending.exit_code, "reason": ending.reason, "go_on": ending.go_on}
    )
    out.pop("value", None)


def _out(workflow: Workflow[Any], state: AttemptState, ending: AttemptEnd, started: float) -> file_kinds.OutRecord:
    """What out.json holds of the ending: the closing facts a person and a script read."""
    paths = state.paths
    out = file_kinds.out_record(
        workflow=workflow.name,
        id=paths.id,
        attempt=state.attempt,
        outcome=ending.outcome,
        exit_code=ending.exit_code,
        stage=ending.stage,
        reason=ending.reason,
        go_on=ending.go_on,
        record=str(paths.dir),
        started=iso(started),
        ended=now_iso(),
        stages=state.stage_list,
        cost=_costs(state, ending),
    )
    if ending.outcome == attempt_outcome.COMPLETED:
        out["value"] = ending.plain
    if ending.needs is not None:
        out["needs"] = ending.needs
    if ending.waits is not None:
        out["waits"] = ending.waits
    if ending.retry is not None:
        out["retry"] = ending.retry
    if ending.worktree is not None:
        out["worktree"] = ending.worktree
    return out


def _report(workflow: Workflow[Any], ending: AttemptEnd, state: AttemptState, cwd: Path) -> Written:
    """The workflow's report of this ending, run in the run's folder as the workflow was."""
    from .report import Ending as ReportEnding
    from .report import StageEntered, write_report

    entered = tuple(
        StageEntered(
            item["stage"],
            item["how"],
            item.get("outcome") or "failed",
            item.get("attempt") or state.attempt,
            state.stage_values.get(item["stage"]) if item.get("outcome") == "succeeded" else None,
        )
        for item in state.stage_list
    )
    told = ReportEnding(
        state.paths.name,
        state.attempt,
        ending.outcome,
        ending.exit_code,
        ending.stage,
        ending.reason,
        ending.go_on,
        entered,
        state.paths.dir,
    )
    previous = Path.cwd()
    if cwd.is_dir():  # not a worktree whose branch is gone: the report runs where the attempt did
        os.chdir(cwd)
    try:
        value = ending.value if ending.outcome == attempt_outcome.COMPLETED else None  # as the workflow returned it
        return write_report(workflow.report, value, told, state.paths)
    finally:
        os.chdir(previous)


def _costs(state: AttemptState, ending: AttemptEnd) -> file_kinds.OutCost:
    """What the attempt's agents cost, and the run's so far, as the closing block and `awf runs`
    say; the closing block is handed the same turns, so it reads the log no more."""
    from ..record.costs import add_up, turn_costs
    from ..record.summary import cost_lines

    turns = state.costs.turns() if state.costs is not None else turn_costs(cost_lines(state.paths.log))
    ending.costs = turns
    return {
        "attempt": add_up(turn for turn in turns if turn.attempt == state.attempt).as_json(),
        "run": add_up(turns).as_json(),
    }


def _plain(value: Any) -> tuple[Any, str | None]:
    """The workflow's value as plain JSON: instances of Python types (models, dataclasses) as their JSON form."""
    problem = json_problem(value)
    if problem is None or "pydantic" not in sys.modules:
        return value, problem
    from .typed import plain_json

    try:
        plain = plain_json(value)
    except Exception:  # pydantic cannot write it either: say what JSON cannot hold
        return value, problem
    return plain, json_problem(plain)


def _parked(make: _Make, park: Park) -> AttemptEnd:
    """The ending of a workflow that parked: what it waits for and how to wake it; a redo on its way
    to its start point stops instead."""
    state, from_stage = make.state, make.from_stage
    redoing = bool(from_stage and not state.plan.reached)
    if redoing:
        # The seeds' rule: a redo stops rather than park on its way. Its waits are kept, so the run
        # stays wakeable, and the wake goes on with the redo.
        reason = (
            f"the attempt would park before it reaches --from-stage {from_stage} "
            f"({park.text}); a redo stops rather than park on its way"
        )
        ending = make.ending(attempt_outcome.STOPPED, reason=reason, redo=from_stage)
    else:
        ending = make.ending(attempt_outcome.PARKED, stage=state.current_stage, reason=park.text)
    ending.waits = park.waits
    names = sorted({name for wait in park.waits for name in wait.get("names") or []})
    name = state.paths.name
    ending.go_on = f"awf send {name} {names[0]} --data JSON" if names else f"awf wake --run-root {state.paths.root}"
    # The first name is the command that goes on: the others wake it as well.
    ending.hints = [f"also wakes on: awf send {name} {n} --data JSON" for n in names[1:]]
    if any(wait.get("due") for wait in park.waits):
        ending.hints.append("wakes after the due time with: awf wake (for cron) or a running awf serve")
    if redoing:
        ending.hints.append(f"the attempt that wakes goes on with the redo from {from_stage}")
    return ending


def _open_stage(state: AttemptState, result: Result) -> str | None:
    """The stage a signal or the deadline cut short: the one cancelled, or the one the workflow
    ended in when it caught the cancel (a wf.stop, an error) on its way out."""
    if state.cancelled_in is not None:
        return state.cancelled_in
    return stage_of(result.error) if result.error is not None else None


def _repeated_stop(state: AttemptState, history: folder.History | None) -> tuple[str, str] | None:
    return repeated_stop_stage(state.last_stage, state.ran, history)


def repeated_stop_stage(
    last_stage: str | None, ran: list[str], history: folder.History | None
) -> tuple[str, str] | None:
    """A continue that ran no stage and stopped between stages where the last attempt did."""
    if ran or history is None or history.last is None or history.last.end is None:
        return None
    last = history.last.end
    if last["outcome"] != attempt_outcome.STOPPED or last.get("stage") is not None:
        return None
    if last.get("after") != last_stage or last_stage is None:
        return None
    stage = last_stage
    return stage, (
        f"attempt {history.last.number} stopped at this same check, and this attempt ran no stage: the check "
        f"sees the value stage {stage} recorded, reused as it was. To redo {stage}, go on with --from-stage {stage}"
    )
