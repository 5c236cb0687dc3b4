"""The Context a workflow receives as `wf`, and what happens when it enters a stage."""

from __future__ import annotations

import asyncio
import inspect
import os
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypedDict, TypeVar, overload

from ..record import entries, file_kinds, folder
from ..record.clock import iso, now_iso
from ..record.errors import RecordWriteError
from ..record.layout import RunPaths
from ..record.names import stage_name_problem
from . import fan_out
from .each import run_each
from .errors import Park, PlanStop, StageValueError, Stop, StopAfter, WorkflowError, check_retry, mark_stage
from .observer import Observer
from .plan import Halt, Reuse, StagePlan, Stamp
from .schema import Schema, json_problem, load_schema

if TYPE_CHECKING:
    from types import UnionType
    from typing import _SpecialForm

    from ..agents.agent import AgentSet
    from .cost_tally import CostTally

    # A type that is not a class, such as Literal["a", "b"] or str | None: its value is not typed.
    TypeForm = _SpecialForm | UnionType

T = TypeVar("T")
R = TypeVar("R")
I = TypeVar("I")  # noqa: E741 — an item of a fan-out


class BranchOf(TypedDict, total=False):
    """What a branch of a fan-out adds to its stage's record: the fan-out it is a branch of."""

    branch_of: str


class AttemptState:
    """What one attempt knows as it runs: shared by the Context and the attempt's driver."""

    def __init__(
        self,
        *,
        paths: RunPaths,
        attempt: int,
        plan: StagePlan,
        observer: Observer,
        workflow_version: str | None,
        schema_base: Path | None,
    ) -> None:
        self.paths = paths
        # The log's progress lines (stage-reused, wf.log), through one descriptor; closed with the attempt.
        self.progress: entries.ProgressLog = entries.ProgressLog(paths.log)
        self.attempt = attempt
        self.plan = plan
        plan.stages_dir = paths.stages
        self.observer = observer
        self.workflow_version = workflow_version
        self.schema_base = schema_base
        # The stage each task is in: a fan-out's branches run side by side, each in a stage of its own.
        self._current_stage: ContextVar[str | None] = ContextVar("awf_stage", default=None)
        # Every stage whose work runs now, in any task: one stage at a time, a fan-out's branches apart.
        self.open_stages: list[str] = []
        self.last_stage: str | None = None
        self.ran: list[str] = []
        self.stage_list: list[file_kinds.OutStage] = []
        self.stage_values: dict[str, Any] = {}  # each succeeded stage's recorded value, for the report
        self.stamps: dict[str, Stamp] = {}  # each stage's version and cache key, recorded with its value
        self.pending_stop: Stop | None = None
        # Set before the attempt's task is cancelled, so the open stage records why.
        self.cancel_reason: str | None = None
        self.cancelled_in: str | None = None
        self.timed_out = False  # the cancel is the attempt's --timeout passing
        # Set while the look-ahead runs the workflow: nothing is run, asked or written.
        self.look_ahead: Any = None
        # `wf.agents`: the attempt's AgentSet (awf.agents.agent), made by `make_agents` (set by
        # attempt_agents.attach) the first time the workflow asks for it.
        self.agents: Any = None
        self.make_agents: Callable[[], Any] | None = None
        # `wf.events`: the attempt's EventsApi, in a run whose workflow declares events.
        self.events: Any = None
        # --max-cost, when the run has one; and the higher one the command that goes on gives,
        # once the run passed it.
        self.max_cost: float | None = None
        self.agent_limits: dict[str, int] = {}  # --max-agents: turns of a runtime at once, across the run root
        self.raise_budget: float | None = None
        self.budget_blind_said = False  # the note that the budget cannot see some agents' cost, said once
        # The run's cost so far, read on from the log as it grows (set as the attempt starts).
        self.costs: CostTally | None = None

    @property
    def current_stage(self) -> str | None:
        """The stage the running task is in, or None between stages."""
        return self._current_stage.get()

    @current_stage.setter
    def current_stage(self, name: str | None) -> None:
        self._current_stage.set(name)


class Context:
    """`wf`: the run's id and attempt, its cwd, and the calls a workflow makes.

    Attributes:
        run_id: the run's id, the same in every attempt.
        attempt: this attempt's number, from 1.
        cwd: the folder the run works in.
        workflow: the workflow's name.
    """

    def __init__(self, state: AttemptState, *, run_id: str, workflow: str, cwd: Path) -> None:
        self._state = state
        self.run_id = run_id
        self.attempt: int = state.attempt
        self.workflow = workflow
        self.cwd = cwd

    @property
    def agents(self) -> AgentSet:
        """Open agents and ask them: `agent = await wf.agents.open(key=..., runtime=...)`."""
        if self._state.agents is None and self._state.make_agents is not None:
            self._state.agents = self._state.make_agents()
        if self._state.agents is None:
            if self._state.look_ahead is not None:
                self._state.look_ahead.agent()  # the look-ahead asks no agent, and cannot see past one
            raise WorkflowError("this context has no agents")
        agents: AgentSet = self._state.agents
        return agents

    @property
    def events(self) -> Any:
        """Wait for events and times: `event = await wf.events.receive("ci")` (see the events page)."""
        if self._state.events is None:
            raise WorkflowError("wf.events: this workflow declares no events; add events={...} to @awf.workflow")
        return self._state.events

    @property
    def stage_name(self) -> str | None:
        """The stage the workflow is in now, or None between stages."""
        return self._state.current_stage

    def stop(self, reason: str, *, retry_after: float | None = None, retries: int = 5) -> NoReturn:
        """End the attempt `stopped` (exit 3). Inside a stage it records that stage stopped.

        `retry_after=SECONDS`: a stop worth retrying (a service down, a rate limit). awf serve
        continues the run that long after, twice as long after each retry in a row that stops
        again, at most `retries` times; the attempt-end line says when (see the stages page)."""
        if retry_after is not None:
            check_retry(retry_after, retries, "wf.stop")
        stop = Stop(
            str(reason),
            stage=self._state.current_stage,
            retry_after=None if retry_after is None else float(retry_after),
            retries=retries,
        )
        self._state.pending_stop = stop
        raise stop

    def log(self, message: str, **data: Any) -> None:
        """Write a line to the run's history and show it."""
        fields: entries.LogFields = {"attempt": self._state.attempt, "message": str(message)}
        if self._state.current_stage:
            fields["stage"] = self._state.current_stage
        if data:
            fields["data"] = data
        if self._state.look_ahead is not None:
            return
        self._state.progress.append(entries.log(**fields))
        self._state.observer.logged(self._state.current_stage, str(message))

    def status(self, text: str, progress: float | None = None) -> None:
        """Say what the workflow is doing now, such as `wf.status("waiting for CI", progress=0.4)`:
        recorded, and shown in the progress view, `awf watch` and `awf runs` until the next status
        or the attempt's end. `progress`, when given, is how far along, from 0 to 1."""
        if not isinstance(text, str):
            raise WorkflowError(f"wf.status: its text must be a string, not {type(text).__name__}")
        if progress is not None and (
            isinstance(progress, bool) or not isinstance(progress, (int, float)) or not 0 <= progress <= 1
        ):
            raise WorkflowError(f"wf.status: progress must be a number from 0 to 1, not {progress!r}")
        state = self._state
        if state.look_ahead is not None:
            return
        fields: entries.StatusFields = {"attempt": state.attempt, "text": text}
        if progress is not None:
            fields["progress"] = float(progress)
        if state.current_stage:
            fields["stage"] = state.current_stage
        state.progress.append(entries.status(**fields))
        state.observer.status(text, None if progress is None else float(progress))

    # What a type checker sees: a stage whose result is a class hands back an instance of it; one
    # whose result is a JSON Schema hands back what its work returns; one without a result, None.
    @overload
    async def stage(
        self,
        name: str,
        work: Callable[[], Awaitable[T]],
        *,
        result: type[T],
        summary: Callable[[T], object] | None = None,
        version: str | None = None,
        cache_key: object = None,
        on_change: Literal["stop", "redo"] = "stop",
        fresh: bool = False,
    ) -> T: ...

    @overload
    async def stage(
        self,
        name: str,
        work: Callable[[], T],
        *,
        result: type[T],
        summary: Callable[[T], object] | None = None,
        version: str | None = None,
        cache_key: object = None,
        on_change: Literal["stop", "redo"] = "stop",
        fresh: bool = False,
    ) -> T: ...

    @overload
    async def stage(
        self,
        name: str,
        work: Callable[[], Awaitable[R]],
        *,
        result: Mapping[str, Any] | str | Path,
        summary: Callable[[R], object] | None = None,
        version: str | None = None,
        cache_key: object = None,
        on_change: Literal["stop", "redo"] = "stop",
        fresh: bool = False,
    ) -> R: ...

    @overload
    async def stage(
        self,
        name: str,
        work: Callable[[], R],
        *,
        result: Mapping[str, Any] | str | Path,
        summary: Callable[[R], object] | None = None,
        version: str | None = None,
        cache_key: object = None,
        on_change: Literal["stop", "redo"] = "stop",
        fresh: bool = False,
    ) -> R: ...

    @overload
    async def stage(
        self,
        name: str,
        work: Callable[[], Awaitable[None]] | Callable[[], None],
        *,
        result: None = None,
        summary: Callable[[None], object] | None = None,
        version: str | None = None,
        cache_key: object = None,
        on_change: Literal["stop", "redo"] = "stop",
        fresh: bool = False,
    ) -> None: ...

    @overload
    async def stage(
        self,
        name: str,
        work: Callable[[], object],
        *,
        result: TypeForm,
        summary: Callable[[Any], object] | None = None,
        version: str | None = None,
        cache_key: object = None,
        on_change: Literal["stop", "redo"] = "stop",
        fresh: bool = False,
    ) -> Any: ...

    async def stage(  # noqa: PLR0913 — a stage's options, each given by name
        self,
        name: str,
        work: Callable[[], object] | None = None,
        *,
        result: object = None,
        summary: Callable[[Any], object] | None = None,
        version: str | None = None,
        cache_key: object = None,
        on_change: Literal["stop", "redo"] = "stop",
        fresh: bool = False,
    ) -> Any:
        """Run `work` once and record what it returns; on a later attempt, reuse that record.

        `result` is what the value must fit: a Python type (a pydantic model, a dataclass, a
        TypedDict, or any type pydantic's TypeAdapter takes, such as `list[Finding]`), whose
        instance the stage hands back on every attempt; or a JSON Schema, as a dict or the path of
        a .json file beside the workflow. The record holds the value's plain JSON form. A stage
        without a result must return None. `summary(value)` is the stage's line in the progress view.

        `version` (a string) and `cache_key` (any JSON value, such as a digest of a prompt file or
        `awf.source_of(fn)`) say what the value depends on; both are recorded with it. A continue
        that finds a record made with another stops at the stage, or with `on_change="redo"`
        redoes it and every stage after it. A record or code without one is reused as before.

        `fresh=True` makes a stage that is never reused: it runs on every attempt (a check of the
        world, such as whether a branch is still there), its value recorded each time. When the
        value equals the one recorded before, the stages after it are reused as usual; when it
        differs, the stage after it is the start point.
        """
        state = self._state
        self._check_dropped_stop()
        self._check_one_at_a_time(name)
        if work is None or not callable(work):
            raise WorkflowError(f"stage {name}: its work must be a callable (an async def of no arguments)")
        schema = load_schema(result, state.schema_base, f"stage {name}") if result is not None else None
        stamp = _stamp(name, version, cache_key, on_change)
        if state.look_ahead is not None:
            replayed = state.events.replayed if state.events else None
            return state.look_ahead.enter(name, schema, state.plan, replayed, stamp, fresh=fresh is True)
        if state.cancel_reason is not None:
            # A signal or the deadline came while code between stages ran without awaiting: no
            # stage is entered after it.
            raise asyncio.CancelledError(state.cancel_reason)
        if fresh is not False and fresh is not True:
            raise WorkflowError(f"stage {name}: fresh must be True or False, not {fresh!r}")
        decision = state.plan.enter(name, schema, stamp, fresh=fresh)
        state.last_stage = name
        if stamp is not None:
            state.stamps[name] = stamp
        if isinstance(decision, Halt):
            halt = PlanStop(decision.reason, stage=name, redo=decision.redo)
            state.pending_stop = halt
            raise halt
        if isinstance(decision, Reuse):
            value = self._reuse(name, decision, schema, summary)
        else:
            if decision.changed:
                changed = f"stage {name} changed since its record was made ({decision.changed})"
                state.observer.notice(f'{changed}: on_change="redo" redoes it and the stages after it')
            if decision.start_point:
                self._reach_start_point(name, decision.why or "")
            value = await self._run(name, work, schema, summary, decision.why)
            if fresh:
                said = state.plan.fresh_ran(name, state.stage_values.get(name))
                if said:
                    state.observer.notice(said)
        self._stop_after(name)
        return value

    async def parallel(
        self,
        items: Iterable[T],
        work: Callable[[T], Awaitable[R]] | Callable[[T], R],
        *,
        label: str | None = None,
        concurrency: int | None = None,
        fail_fast: bool = False,
    ) -> list[R]:
        """Run `work(item)` for each item side by side, at most `concurrency` at once; the results in
        the items' order. Not recorded: inside a stage, the stage is what is kept.

        If a branch raises, the others finish (with `fail_fast`, they are cancelled) and the first
        error is raised, noting how many others failed. The progress view shows the group under
        `label`, a line a branch.
        """
        return await fan_out.parallel(
            self._state.observer, items, work, label=label, concurrency=concurrency, fail_fast=fail_fast
        )

    @overload
    async def each(
        self,
        name: str,
        items: Iterable[I],
        work: Callable[[I], Awaitable[T]] | Callable[[I], T],
        *,
        result: type[T],
        key: Callable[[I], str],
        concurrency: int | None = None,
        summary: Callable[[T], object] | None = None,
    ) -> list[T]: ...

    @overload
    async def each(
        self,
        name: str,
        items: Iterable[I],
        work: Callable[[I], Awaitable[R]] | Callable[[I], R],
        *,
        result: Mapping[str, Any] | str | Path,
        key: Callable[[I], str],
        concurrency: int | None = None,
        summary: Callable[[R], object] | None = None,
    ) -> list[R]: ...

    @overload
    async def each(
        self,
        name: str,
        items: Iterable[I],
        work: Callable[[I], object],
        *,
        result: TypeForm,
        key: Callable[[I], str],
        concurrency: int | None = None,
        summary: Callable[[Any], object] | None = None,
    ) -> list[Any]: ...

    async def each(
        self,
        name: str,
        items: Iterable[Any],
        work: Callable[[Any], object],
        *,
        result: object,
        key: Callable[[Any], str],
        concurrency: int | None = None,
        summary: Callable[[Any], object] | None = None,
    ) -> list[Any]:
        """A fan-out whose branches are recorded: `work(item)` for each item, each a stage
        `name@key(item)` with its own record, at most `concurrency` at once; the values in the
        items' order. On a later attempt a branch with a succeeded record is reused, and only the
        others run. Once every branch succeeded, `name` is recorded too, its value the list.

        `result` is what each branch's value must fit, as a stage's result. If a branch fails or
        stops, the others finish and are recorded, and the fan-out ends as the first that failed.
        """
        values = await run_each(
            self, name, items, work, result=result, key=key, concurrency=concurrency, summary=summary
        )
        self._stop_after(name)
        return values

    def _stop_after(self, name: str) -> None:
        """End the attempt once the stage --to-stage names has succeeded (run, reused or given)."""
        state = self._state
        if state.plan.to_stage is None or name != state.plan.to_stage:
            return
        stop = StopAfter(f"--to-stage {name}: the attempt ends once it has succeeded", redo=None)
        state.pending_stop = stop  # a workflow that catches the stop and goes on fails, as for wf.stop
        raise stop

    def _check_dropped_stop(self) -> None:
        stop = self._state.pending_stop
        if stop is not None:
            self._state.pending_stop = None
            raise WorkflowError(f"stop was caught: {stop.reason!r} was raised by wf.stop and then dropped")

    def _check_one_at_a_time(self, name: str) -> None:
        """The stage rules a stage or a fan-out is held to as it is entered."""
        state = self._state
        problem = stage_name_problem(name)
        if problem:
            raise WorkflowError(problem)
        if state.current_stage is not None:
            raise WorkflowError(
                f"stage {name} was entered inside stage {state.current_stage}: one stage at a time; "
                "a loop or a parallel goes inside one stage, a fan-out of recorded branches is wf.each"
            )
        if state.open_stages:
            raise WorkflowError(
                f"stage {name} was entered while stage {state.open_stages[0]} runs: one stage at a time; "
                "a fan-out of recorded branches is wf.each"
            )
        if name in state.plan.entered_names:
            raise WorkflowError(f"stage {name} was entered twice in one attempt: each name once per attempt")

    def _reuse(self, name: str, decision: Reuse, schema: Schema | None, summary: Callable[[Any], Any] | None) -> Any:
        state = self._state
        record = decision.record
        if decision.how in ("provided", "skipped"):
            # A value given or kept is recorded now, as this attempt's: the stage's current record.
            provided = self._record(
                name,
                "succeeded",
                value=decision.plain,
                handed=decision.value,
                schema=schema,
                summary=summary,
                started=None,
                origin="provided" if decision.how == "provided" else "skipped",
            )
            if decision.how == "skipped" and record is not None:
                provided["value_of"] = record["attempt"]
            folder.write_stage_record(state.paths, provided)
            record = {**provided}
        if decision.how == "reused":
            # The line a person sees is made from the value handed back: the file may have been
            # edited since its summary was written. The log keeps the new one only when it differs.
            fresh: dict[str, Any] = {}
            if record is not None and summary is not None:
                shown = _summary_text(summary, decision.value)
                if shown != record.get("summary"):
                    record, fresh = {**record, "summary": shown}, {"summary": shown}
            # Not fsynced: it only tells a watcher; the record it names is already durable.
            state.progress.append(
                entries.stage_reused(
                    attempt=state.attempt,
                    stage=name,
                    recorded_by=record["attempt"] if record else None,
                    **fresh,
                )
            )
        state.stage_list.append(
            {
                "stage": name,
                "how": decision.how,
                "outcome": "succeeded",
                "attempt": record["attempt"] if record else state.attempt,
                "summary": record.get("summary") if record else None,
            }
        )
        state.stage_values[name] = record.get("value") if record else None
        state.observer.stage_reused(name, decision.plain, record, decision.how)
        return decision.value

    def _reach_start_point(self, name: str, why: str, keep: frozenset[str] = frozenset()) -> None:
        state = self._state
        redo = state.plan.redo
        if state.plan.events:
            # Records stay current in a run with events; a redo marks what it made stale instead.
            if redo is not None and name == redo.stage and not redo.reached:
                redo.reached = True
                redo.before_stages = set(state.plan.reused)
                redo.before_waits = set(state.events.replayed if state.events else [])
                entries.append(
                    state.paths.log,
                    entries.redo_reached(
                        attempt=state.attempt,
                        stage=name,
                        redo_attempt=redo.attempt,
                        before_stages=sorted(redo.before_stages),
                        before_waits=sorted(redo.before_waits),
                    ),
                )
        else:
            reused = set(state.plan.reused)
            # A stage --skip-stage names keeps its value whatever the redo: it is recorded again as it is entered.
            # A fresh stage ran before the start point: its record is this attempt's, and current.
            kept = reused | state.plan.skip | set(state.ran) | keep
            stale = [stage for stage in state.plan.records if stage not in kept]
            folder.invalidate(state.paths, stale, state.attempt, name)
        entries.append(state.paths.log, entries.start_point(attempt=state.attempt, stage=name, why=why))

    async def _run(
        self,
        name: str,
        work: Callable[[], object],
        schema: Schema | None,
        summary: Callable[[Any], Any] | None,
        why: str | None,
        branch_of: str | None = None,
    ) -> Any:
        state = self._state
        started_at = time.time()
        start = entries.stage_start(attempt=state.attempt, stage=name)
        if branch_of is not None:
            start["branch_of"] = branch_of
        entries.append(state.paths.log, start)
        state.observer.stage_started(name, why)
        state.current_stage = name
        state.open_stages.append(name)
        state.ran.append(name)
        if branch_of is not None:
            fields: BranchOf = {"branch_of": branch_of}
            try:
                return await self._work(name, work, schema, summary, started_at, fields)
            finally:
                state.open_stages.remove(name)
                state.current_stage = None
                if state.agents is not None:
                    state.agents.end_opened_in(name)  # a branch's agents end with it; its siblings' go on
        try:
            return await self._work(name, work, schema, summary, started_at, {})
        finally:
            state.open_stages.remove(name)

    async def _work(
        self,
        name: str,
        work: Callable[[], object],
        schema: Schema | None,
        summary: Callable[[Any], Any] | None,
        started_at: float,
        fields: BranchOf,
    ) -> Any:
        """The stage's work, awaited, and its record written: succeeded, failed or stopped."""
        state = self._state
        try:
            value = work()
            if inspect.isawaitable(value):
                value = await value
        except Stop as stop:
            # Still pending: it is dropped if the workflow catches it and carries on.
            stop.stage = name
            mark_stage(stop, name)  # a stop after the deadline or a signal: the ending names this stage
            self._finish(name, "stopped", started_at, schema=schema, reason=stop.reason, **fields)
            raise
        except Park:
            raise  # the stage has not finished: no record, so the wake that answers the wait redoes it
        except asyncio.CancelledError:
            state.cancelled_in = name
            self._finish(name, "failed", started_at, schema=schema, reason=state.cancel_reason or "cancelled", **fields)
            raise
        except BaseException as error:
            mark_stage(error, name)
            self._finish(
                name,
                "failed",
                started_at,
                schema=schema,
                reason=f"{type(error).__name__}: {error}",
                error=error,
                **fields,
            )
            raise
        finally:
            state.current_stage = None
        if state.cancel_reason is not None:
            # The work returned after a signal or the deadline (a call that could not be cut
            # short): it did not finish in time, so it is recorded failed, as a cancelled one is.
            state.cancelled_in = name
            self._finish(name, "failed", started_at, schema=schema, reason=state.cancel_reason, **fields)
            raise asyncio.CancelledError(state.cancel_reason)
        dropped = state.pending_stop
        # A stop of a sibling branch is that branch's, pending until the fan-out raises it.
        if dropped is not None and (dropped.stage in (None, name) or not fields):
            state.pending_stop = None
            reason = f"stop was caught: {dropped.reason!r} was raised by wf.stop and then dropped"
            self._finish(name, "failed", started_at, schema=schema, reason=reason, **fields)
            raise mark_stage(WorkflowError(reason), name)
        plain, handed, problem = self._checked(name, value, schema)
        if problem:
            self._finish(name, "failed", started_at, schema=schema, reason=problem, **fields)
            raise mark_stage(StageValueError(problem), name)
        self._finish(
            name, "succeeded", started_at, value=plain, handed=handed, schema=schema, summary=summary, **fields
        )
        return handed

    @staticmethod
    def _checked(name: str, value: Any, schema: Schema | None) -> tuple[Any, Any, str | None]:
        """What a stage's work returned, as recorded (plain JSON) and as handed back; or why neither."""
        if schema is None:
            if value is not None:
                return (
                    None,
                    None,
                    (
                        f"stage {name} has no result schema but returned a {type(value).__name__}; "
                        "give it result=SCHEMA, or return None"
                    ),
                )
            return None, None, None
        plain, problem = schema.dump(value)
        if problem:
            return None, None, f"stage {name} returned a value that does not fit its result: {problem}"
        problem = json_problem(plain)
        if problem:
            return None, None, f"stage {name} returned a value a later attempt could not reuse: {problem}"
        # Handed back as a later attempt would get it: read from the plain form that is recorded.
        handed, problem = schema.load(plain)
        if problem:
            return None, None, f"stage {name} returned a value that does not fit its result: {problem}"
        return plain, handed, None

    def _record(  # noqa: PLR0913 — a stage record's fields, each given by name
        self,
        name: str,
        outcome: file_kinds.StageOutcome,
        *,
        value: Any = None,
        handed: Any = None,
        schema: Schema | None = None,
        summary: Callable[[Any], Any] | None = None,
        started: float | None,
        origin: file_kinds.StageOrigin = "ran",
        reason: str | None = None,
        error: BaseException | None = None,
        branch_of: str | None = None,
    ) -> file_kinds.StageRecord:
        state = self._state
        record = file_kinds.stage_record(
            stage=name,
            outcome=outcome,
            origin=origin,
            attempt=state.attempt,
            started=iso(started) if started is not None else None,
            ended=now_iso(),
            has_result=schema is not None,
            value=value if outcome == "succeeded" else None,
            summary=_summary_text(summary, handed) if outcome == "succeeded" else None,
            reason=reason,
            workflow_version=state.workflow_version,
        )
        stamp = state.stamps.get(name)
        if stamp is not None and stamp.version is not None:
            record["stage_version"] = stamp.version
        if stamp is not None and stamp.cache_key is not None:
            record["cache_key"] = stamp.cache_key
        if branch_of is not None:
            record["branch_of"] = branch_of
        if error is not None:
            record["error"] = {
                "type": type(error).__name__,
                "message": str(error),
                "traceback": "".join(traceback.format_exception(error)),
            }
        return record

    def _finish(self, name: str, outcome: file_kinds.StageOutcome, started: float, **fields: Any) -> None:
        state = self._state
        record = self._record(name, outcome, started=started, **fields)
        try:
            folder.write_stage_record(state.paths, record)
        except RecordWriteError as error:
            raise mark_stage(error, name) from None
        state.stage_list.append(
            {"stage": name, "how": "ran", "outcome": outcome, "attempt": state.attempt, "summary": record["summary"]}
        )
        state.stage_values[name] = record["value"]
        state.observer.stage_ended({**record}, time.time() - started)


def _stamp(name: str, version: object, cache_key: object, on_change: object) -> Stamp | None:
    """The stage's version and cache key, checked as it is entered: a key no record could hold fails now."""
    if version is not None and not isinstance(version, str):
        raise WorkflowError(f"stage {name}: version must be a string, not {type(version).__name__}: {version!r}")
    if on_change not in ("stop", "redo"):
        raise WorkflowError(f'stage {name}: on_change must be "stop" or "redo", not {on_change!r}')
    if cache_key is not None:
        problem = json_problem(cache_key)
        if problem:
            raise WorkflowError(f"stage {name}: its cache_key is not a JSON value a record can hold: {problem}")
    if version is None and cache_key is None:
        return None
    return Stamp(version, cache_key, str(on_change))


def _summary_text(summary: Callable[[Any], Any] | None, value: Any) -> str | None:
    if summary is None:
        return None
    try:
        text = summary(value)
    except Exception as error:  # a summary is only a line in the view; it must not lose the work
        return f"(summary failed: {type(error).__name__}: {error})"
    return None if text is None else str(text)


_AWF = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def in_stage_work(frame: FrameType | None) -> bool:
    """Whether `frame` is running a stage's work: code of the workflow's own (or what it called)
    under the frame of Context._work, with no frame of awf's between. Only there may a stage be
    cut short by raising into it; awf's own code, writing a record, never is."""
    if frame is None or frame.f_code.co_filename.startswith(_AWF):
        return False
    while frame is not None:
        if frame.f_code is _RUN_CODE:
            return True
        if frame.f_code.co_filename.startswith(_AWF):
            return False
        frame = frame.f_back
    return False


_RUN_CODE = Context._work.__code__
