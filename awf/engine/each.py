"""`wf.each`: a fan-out whose branches are stages, `name@key`, each recorded and reused on its own.

The plan decides every branch as the fan-out is entered (plan.py: `enter_each`); the reused are
handed back at once, the others run side by side through the one path a stage's work runs by, so a
branch's record, its signals and its stop are a stage's. Once every branch succeeded, `name` is
recorded too, its value the list, so the start point, --from-stage and `awf runs` see the fan-out
as one stage.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ..record import file_kinds, folder
from ..record.clock import iso, now_iso
from ..record.errors import RecordError
from . import fan_out
from .errors import PlanStop, Stop, WorkflowError, mark_stage
from .plan import Halt, Reuse, Run
from .schema import Schema, load_schema


class StageCalls(Protocol):
    """What the fan-out uses of the Context: the steps one stage is made of."""

    _state: Any

    def _check_dropped_stop(self) -> None: ...

    def _check_one_at_a_time(self, name: str) -> None: ...

    def _reuse(
        self, name: str, decision: Reuse, schema: Schema | None, summary: Callable[[Any], Any] | None
    ) -> Any: ...

    def _reach_start_point(self, name: str, why: str, keep: frozenset[str] = ...) -> None: ...

    async def _run(
        self,
        name: str,
        work: Callable[[], object],
        schema: Schema | None,
        summary: Callable[[Any], Any] | None,
        why: str | None,
        branch_of: str | None = ...,
    ) -> Any: ...


async def run_each(  # noqa: PLR0913 — wf.each's arguments, each given by name
    wf: StageCalls,
    name: str,
    items: Iterable[Any],
    work: Callable[[Any], object],
    *,
    result: object,
    key: Callable[[Any], str],
    concurrency: int | None,
    summary: Callable[[Any], object] | None,
) -> list[Any]:
    state = wf._state
    wf._check_dropped_stop()
    wf._check_one_at_a_time(name)
    listed = list(items)
    branches = _branches(name, listed, work, result, key, concurrency)
    schema = load_schema(result, state.schema_base, f"fan-out {name}")
    if state.look_ahead is not None:
        replayed = state.events.replayed if state.events else None
        values: list[Any] = state.look_ahead.enter_each(name, branches, schema, state.plan, replayed)
        return values
    if state.cancel_reason is not None:
        raise asyncio.CancelledError(state.cancel_reason)
    began = time.time()
    decisions = state.plan.enter_each(name, branches, schema)
    state.last_stage = name
    for branch, decision in zip(branches, decisions, strict=True):
        if isinstance(decision, Halt):
            halt = PlanStop(decision.reason, stage=branch, redo=decision.redo)
            state.pending_stop = halt
            raise halt
    values = [None] * len(listed)
    tally = fan_out.Tally(len(listed))
    for index, decision in enumerate(decisions):
        if isinstance(decision, Reuse):
            values[index] = wf._reuse(branches[index], decision, schema, summary)
            tally.add("reused")
    running = [index for index, decision in enumerate(decisions) if isinstance(decision, Run)]
    if running:
        start = next((index for index in running if _run_of(decisions[index]).start_point), None)
        if start is not None:
            at = name if state.plan.from_stage == name else branches[start]
            # A branch no longer asked for is left as it is: it is not after the start point.
            asked = set(branches)
            keep = frozenset(
                stage
                for stage, record in state.plan.records.items()
                if isinstance(record, dict) and record.get("branch_of") == name and stage not in asked
            )
            wf._reach_start_point(at, _run_of(decisions[start]).why or "", keep)
        calls: list[Callable[[], object]] = [functools.partial(work, item) for item in listed]
        await _run_branches(wf, name, calls, branches, decisions, running, values, tally, schema, summary, concurrency)
    _record_fan_out(wf, name, branches, decisions, began)
    return values


def _branches(
    name: str, items: list[Any], work: object, result: object, key: Callable[[Any], str], concurrency: int | None
) -> list[str]:
    """The branches' names, once the fan-out's arguments are checked; or the failure that names what is wrong."""
    problem = fan_out.limit_problem(f"fan-out {name}", concurrency)
    if problem is None and not callable(work):
        problem = f"fan-out {name}: its work must be a callable of one item (an async def of one argument)"
    if problem is None and result is None:
        problem = f"fan-out {name}: give result=SCHEMA, what each branch's value must fit"
    if problem:
        raise WorkflowError(problem)
    try:
        return fan_out.branch_names(name, items, key)
    except WorkflowError as error:
        raise mark_stage(error, name) from None


def _run_of(decision: Any) -> Run:
    assert isinstance(decision, Run)
    return decision


async def _run_branches(  # noqa: PLR0913 — the fan-out's state, handed down whole
    wf: StageCalls,
    name: str,
    calls: list[Callable[[], object]],
    branches: list[str],
    decisions: list[Any],
    running: list[int],
    values: list[Any],
    tally: fan_out.Tally,
    schema: Schema | None,
    summary: Callable[[Any], object] | None,
    concurrency: int | None,
) -> None:
    """Run the branches that are not reused, at most `concurrency` at once; every one finishes,
    and the first that failed or stopped is raised, saying how the others ended."""
    state = wf._state
    limit = asyncio.Semaphore(concurrency or len(running))
    state.observer.group_started(name, len(running), concurrency)

    async def one(index: int) -> None:
        async with limit:
            try:
                values[index] = await wf._run(
                    branches[index],
                    calls[index],
                    schema,
                    summary,
                    _run_of(decisions[index]).why,
                    branch_of=name,
                )
            except asyncio.CancelledError as error:
                if state.cancel_reason is not None or _cancelling():
                    raise  # the attempt is cancelled: every branch is, and the fan-out with them
                tally.add("failed", error)  # the branch's work was cancelled from within
                return
            except BaseException as error:
                tally.add("stopped" if isinstance(error, Stop) else "failed", error)
                return
        tally.add("succeeded")

    await asyncio.gather(*(one(index) for index in running))
    state.observer.group_ended(name, tally.text())
    first = tally.first
    if first is None:
        return
    # The stop raised is the fan-out's: a sibling's stop, recorded in its branch, is not dropped.
    state.pending_stop = first if isinstance(first, Stop) else None
    said = f"fan-out {name}: {tally.text()}; a continue runs only the branches that did not succeed"
    raise fan_out.note_on(first, said)


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _record_fan_out(wf: StageCalls, name: str, branches: list[str], decisions: list[Any], began: float) -> None:
    """`name` recorded once every branch succeeded, its value the list: or, when every branch was
    reused and its record says the same, reused as it is."""
    state = wf._state
    plain = [state.stage_values.get(branch) for branch in branches]
    keys = [branch.split("@", 1)[1] for branch in branches]
    record = state.plan.records.get(name)
    every = all(isinstance(decision, Reuse) for decision in decisions)
    if every:
        state.plan.reused.append(name)  # reached by nothing that ran: a later start point leaves it
    if (
        every
        and all(decision.how == "reused" for decision in decisions)
        and record is not None
        and not isinstance(record, RecordError)
        and record["outcome"] == "succeeded"
        and record.get("value") == plain
        and record.get("branches") == keys
    ):
        wf._reuse(name, Reuse(plain, record, "reused", plain), None, None)
        return
    provided = every and all(decision.how == "provided" for decision in decisions)
    made = file_kinds.stage_record(
        stage=name,
        outcome="succeeded",
        origin="provided" if provided else "ran",
        attempt=state.attempt,
        started=iso(began),
        ended=now_iso(),
        has_result=True,
        value=plain,
        summary=f"{len(branches)} branch{'' if len(branches) == 1 else 'es'}",
        reason=None,
        workflow_version=state.workflow_version,
        branches=keys,
    )
    folder.write_stage_record(state.paths, made)
    state.stage_list.append(
        {"stage": name, "how": "ran", "outcome": "succeeded", "attempt": state.attempt, "summary": made["summary"]}
    )
    state.stage_values[name] = plain
    state.observer.stage_ended({**made}, time.time() - began)
