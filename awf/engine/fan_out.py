"""Fan-outs: `wf.parallel` (branches side by side, not recorded) and what `wf.each` (a branch a
stage record) needs besides the stage plan: its branches' names, checked, and how its branches ended.

Both let every branch finish when one fails, so no work already paid for is thrown away, and
raise the first failure, saying how many others failed.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..record.names import stage_name_problem
from .errors import Stop, WorkflowError
from .observer import Observer

T = TypeVar("T")
R = TypeVar("R")


def branch_names(name: str, items: Sequence[Any], key: Callable[[Any], object]) -> list[str]:
    """Each item's branch, `name@key`, in the items' order; raises WorkflowError naming a key that
    is not a stage-name part, or two items with one key."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        try:
            made = key(item)
        except Exception as error:
            raise WorkflowError(
                f"fan-out {name}: key() raised {type(error).__name__}: {error} for item {index}"
            ) from None
        if not isinstance(made, str):
            raise WorkflowError(
                f"fan-out {name}: key() returned a {type(made).__name__} for item {index}; a key is a str"
            )
        branch = f"{name}@{made}"
        if not made or stage_name_problem(branch):
            raise WorkflowError(
                f"fan-out {name}: key {made!r} of item {index} cannot name a branch: a key is lowercase letters, "
                "digits, '.', '_', '@' and '-'"
            )
        if made in seen:
            raise WorkflowError(
                f"fan-out {name}: items {seen[made]} and {index} have the same key {made!r}; "
                "each branch needs a key of its own"
            )
        seen[made] = index
        names.append(branch)
    return names


@dataclass
class Tally:
    """How a fan-out's branches ended, in the order they ended."""

    total: int
    counts: dict[str, int] = field(default_factory=dict)
    first: BaseException | None = None  # the first failure or stop, by time

    def add(self, how: str, error: BaseException | None = None) -> None:
        self.counts[how] = self.counts.get(how, 0) + 1
        if error is not None and self.first is None:
            self.first = error

    def text(self) -> str:
        """`2 of 6 branches failed, 4 succeeded`: the failures first."""
        order = ["failed", "stopped", "cancelled", "succeeded", "reused"]
        parts = [f"{self.counts[how]} {how}" for how in order if self.counts.get(how)]
        if not parts:
            return f"0 of {self.total} branches ended"
        first, *rest = parts
        count, how = first.split(" ", 1)
        return ", ".join([f"{count} of {self.total} branch{'' if self.total == 1 else 'es'} {how}", *rest])


def note_on(error: BaseException, text: str) -> BaseException:
    """Say on the first failure of a fan-out how the others ended: the ending adds it to its reason."""
    try:
        error.awf_fan_out = text  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return error


def fan_out_note(error: BaseException) -> str | None:
    note = getattr(error, "awf_fan_out", None)
    return note if isinstance(note, str) else None


def limit_problem(what: str, concurrency: int | None) -> str | None:
    if concurrency is None:
        return None
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        return f"{what}: concurrency is a whole number of 1 or more, or None for all at once, not {concurrency!r}"
    return None


async def parallel(
    observer: Observer,
    items: Iterable[T],
    work: Callable[[T], Awaitable[R]] | Callable[[T], R],
    *,
    label: str | None,
    concurrency: int | None,
    fail_fast: bool,
) -> list[R]:
    """`wf.parallel`: `work(item)` for each item, at most `concurrency` at once; the results in the
    items' order. A branch that raises lets the others finish (or, with fail_fast, cancels them),
    and the first error is raised, noting how many others failed."""
    listed = list(items)
    group = _Group(observer, label or "parallel", work, fail_fast, Tally(len(listed)))
    problem = limit_problem(f"wf.parallel {group.label}", concurrency)
    if problem:
        raise WorkflowError(problem)
    results: list[Any] = [None] * len(listed)
    limit = asyncio.Semaphore(concurrency or max(len(listed), 1))
    observer.group_started(group.label, len(listed), concurrency)

    async def one(index: int, item: T) -> None:
        async with limit:
            await group.branch(index, item, results)

    group.tasks.extend(asyncio.ensure_future(one(index, item)) for index, item in enumerate(listed))
    ended = await asyncio.gather(*group.tasks, return_exceptions=True)
    tally = group.tally
    for outcome in ended:
        if isinstance(outcome, asyncio.CancelledError):
            if tally.first is None:
                raise outcome  # not by fail_fast: the attempt's own cancel
            tally.add("cancelled")  # by fail_fast, started or not
    observer.group_ended(group.label, tally.text())
    if tally.first is not None:
        raise _first_failure(group.label, tally)
    return results


@dataclass
class _Group:
    """A wf.parallel as it runs: its branches' tasks and how they ended."""

    observer: Observer
    label: str
    work: Callable[[Any], object]
    fail_fast: bool
    tally: Tally
    tasks: list[asyncio.Future[None]] = field(default_factory=list)

    async def branch(self, index: int, item: Any, results: list[Any]) -> None:
        name, observer = f"{self.label} #{index + 1}", self.observer
        observer.branch_started(self.label, name)
        started = time.monotonic()
        try:
            value = self.work(item)
            if inspect.isawaitable(value):
                value = await value
        except asyncio.CancelledError:
            observer.branch_ended(self.label, name, "cancelled", None, time.monotonic() - started)
            raise
        except BaseException as error:
            how = "stopped" if isinstance(error, Stop) else "failed"
            self.tally.add(how, error)
            observer.branch_ended(self.label, name, how, _reason(error), time.monotonic() - started)
            if self.fail_fast:
                for task in self.tasks:
                    if task is not asyncio.current_task():
                        task.cancel()
            return
        results[index] = value
        self.tally.add("succeeded")
        observer.branch_ended(self.label, name, "succeeded", None, time.monotonic() - started)


def _first_failure(group: str, tally: Tally) -> BaseException:
    """The first error of a wf.parallel, noting how many others failed (and were cancelled)."""
    assert tally.first is not None
    others = sum(tally.counts.get(how, 0) for how in ("failed", "stopped")) - 1
    cancelled = tally.counts.get("cancelled", 0)
    said = f"wf.parallel {group}: {others} other branch{'' if others == 1 else 'es'} failed"
    said += f", {cancelled} cancelled" if cancelled else ""
    first = tally.first
    if isinstance(first, Exception):
        first.add_note(said)  # seen where the workflow catches it, as well as in the ending
    return note_on(first, said)


def _reason(error: BaseException) -> str:
    if isinstance(error, Stop):
        return error.reason
    return f"{type(error).__name__}: {error}"
