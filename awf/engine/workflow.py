"""`@awf.workflow`: what a workflow is, as the author declares it."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..record.entries import Args
from ..record.names import id_problem, stage_name_problem
from .errors import WorkflowError

_VERSION = re.compile(r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+.].*)?")


V = TypeVar("V")


@dataclass(frozen=True)
class Workflow(Generic[V]):
    """A workflow: its metadata and its async `run(wf, **args)`, which returns a V."""

    name: str
    run: Callable[..., Coroutine[Any, Any, V]]
    description: str = ""
    version: str | None = None
    prepare: Callable[[list[str]], Mapping[str, Any]] | None = None
    id: Callable[..., str] | None = None
    present: Callable[[Any], object] | None = None  # given the value run returned
    events: Mapping[str, Any] | None = None
    report: Callable[[Any, Any], str | None] | None = None  # (value, ending) -> report.md's markdown
    worktree: bool = False  # each run in a git worktree and on a branch of its own
    shares_folder: bool = False  # its runs work beside other runs in one folder (agents that only read)
    source_file: Path | None = field(default=None, compare=False)

    @property
    def base_dir(self) -> Path | None:
        """Where schema paths are found: the folder of the file that defines the workflow."""
        return self.source_file.parent if self.source_file else None

    def prepare_args(self, argv: Sequence[str]) -> Args:
        """The keyword arguments of `run` for `argv`. Raises ValueError when they are refused."""
        if self.prepare is None:
            if argv:
                raise ValueError(
                    f"workflow {self.name} takes no arguments (it has no prepare), but was given {list(argv)}"
                )
            return {}
        args = self.prepare(list(argv))
        if not isinstance(args, Mapping):
            raise ValueError(f"prepare must return a dict of run's arguments, not {type(args).__name__}")
        return dict(args)

    def run_id_for(self, args: Mapping[str, Any]) -> str | None:
        if self.id is None:
            return None
        value = self.id(**args) if _takes_keywords(self.id) else self.id(dict(args))
        return None if value is None else str(value)

    def __call__(self, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, V]:
        return self.run(*args, **kwargs)


def _takes_keywords(fn: Callable[..., Any]) -> bool:
    """id(args) may take the args dict whole, as in the seeds, or as keywords, as run does."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return not (len(params) == 1 and params[0].kind in positional)


@cache
def version_key(version: str | None) -> tuple[int, int] | None:
    """The part of a version whose change makes records stale: the major, or under 0.x the minor."""
    if version is None:
        return None
    match = _VERSION.fullmatch(version.strip())
    if not match:
        return None
    major = int(match.group(1))
    minor = int(match.group(2) or 0)
    return (0, minor) if major == 0 else (major, 0)


def workflow(  # noqa: PLR0913 — the author API: each keyword is a setting of @awf.workflow
    *,
    name: str,
    description: str = "",
    version: str | None = None,
    prepare: Callable[[list[str]], Mapping[str, Any]] | None = None,
    id: Callable[..., str] | None = None,
    present: Callable[[Any], object] | None = None,
    events: Mapping[str, Any] | None = None,
    report: Callable[[Any, Any], str | None] | None = None,
    worktree: bool = False,
    shares_folder: bool = False,
) -> Callable[[Callable[..., Coroutine[Any, Any, V]]], Workflow[V]]:
    """Declare a workflow on `async def run(wf, **args)`.

    >>> @workflow(name="hello", description="Say hello.")
    ... async def hello(wf):
    ...     return await wf.stage("greet", lambda: _greeting(), result={"type": "string"})

    `worktree=True` gives each run a git worktree and a branch of its own, as `awf run --worktree`
    does; `shares_folder=True` lets its runs work beside other runs in one folder, for workflows
    whose agents only read.
    """
    problem = id_problem(name, "workflow name")
    if problem:
        raise WorkflowError(problem)
    if version is not None and (not isinstance(version, str) or version_key(version) is None):
        raise WorkflowError(f"workflow {name}: version {version!r} is not a version such as '1.0.0'")
    if report is not None and not callable(report):
        raise WorkflowError(f"workflow {name}: report is a function of (value, ending) returning markdown")
    if events is not None:
        if not isinstance(events, Mapping):
            raise WorkflowError(f"workflow {name}: events is a dict of event name to schema (or None for any value)")
        for event in events:
            problem = stage_name_problem(event)
            if problem:
                raise WorkflowError(f"workflow {name}: event {problem.removeprefix('stage name ')}")

    def wrap(run: Callable[..., Coroutine[Any, Any, V]]) -> Workflow[V]:
        if not inspect.iscoroutinefunction(run):
            raise WorkflowError(f"workflow {name}: decorate an `async def`, not {run!r}")
        source = inspect.getsourcefile(run)
        return Workflow(
            name=name,
            run=run,
            description=description,
            version=version,
            prepare=prepare,
            id=id,
            present=present,
            events=events,
            report=report,
            worktree=worktree,
            shares_folder=shares_folder,
            source_file=Path(source).resolve() if source else None,
        )

    return wrap
