"""Finding the run a read command names: `WORKFLOW/ID` under the run root of --cwd or --run-root."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..record.names import id_problem
from ..record.roots import root_problem, run_root_for
from .errors import CommandError, Problem

if TYPE_CHECKING:
    from ..record.layout import RunPaths


class TargetError(CommandError):
    """A run that cannot be named or found."""

    def __init__(self, message: str, problem: Problem) -> None:
        super().__init__(message, problem)


class Where(NamedTuple):
    """The folder a read command looks in."""

    root: Path
    here: Path

    @classmethod
    def of(cls, cwd: Path | None, run_root: Path | None) -> Where:
        here = Path.cwd() if cwd is None else cwd.expanduser().absolute()
        if cwd is not None and not here.is_dir():
            raise TargetError(f"--cwd {cwd} is not a folder", Problem.USAGE)
        root = run_root_for(here, run_root.expanduser() if run_root else None)
        problem = root_problem(root, given=run_root is not None)
        if problem:
            raise TargetError(problem, Problem.USAGE)
        return cls(root, here)


def split_name(text: str) -> tuple[str, str | None]:
    """`WORKFLOW` or `WORKFLOW/ID`, each checked against the naming rules (a usage error if not)."""
    workflow, _, run_id = text.partition("/")
    problem = id_problem(workflow, "workflow name")
    if problem is None and run_id:
        problem = id_problem(run_id, "run id")
    if problem is None and text.endswith("/"):
        problem = f"{text!r} names no run id after the '/'"
    if problem:
        raise TargetError(f"{problem}; name a run as WORKFLOW/ID", Problem.USAGE)
    return workflow, run_id or None


def find_run(text: str, where: Where) -> RunPaths:
    """The run `WORKFLOW/ID` names, or a TargetError (exit 1) saying where it looked."""
    workflow, run_id = split_name(text)
    if run_id is None:
        raise TargetError(f"{text!r} names a workflow, not a run: name a run as WORKFLOW/ID", Problem.USAGE)
    from ..record.layout import RunPaths

    paths = RunPaths(where.root, workflow, run_id)
    if (os.path.lexists(paths.log) and not paths.log.is_file()) or paths.log.is_symlink():
        raise TargetError(f"{paths.log}: cannot be read: it is not a plain file", Problem.UNREADABLE)
    if paths.dir.exists() and not paths.dir.is_dir():
        raise TargetError(
            f"{paths.dir}: cannot be read: it is a file, where run {paths.name} keeps its folder", Problem.UNREADABLE
        )
    if not paths.log.is_file():
        hint = " (runs live in .awf/runs under the folder a run works in: give --cwd or --run-root)"
        raise TargetError(f"there is no run {paths.name}: looked in {paths.workflow_dir}{hint}", Problem.NO_SUCH_RUN)
    return paths
