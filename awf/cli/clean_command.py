"""`awf clean`: remove the worktree of a run that is done with it; its branch and its record stay.

The worktree is removed through git, so `git worktree list` and `git worktree prune` agree with
awf. A worktree with changes nobody committed is kept unless `--force` says to throw them away;
a run with a live attempt is never touched. A continue of a cleaned run makes its worktree again
from its branch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..engine import worktree as worktrees
from ..record import folder
from ..record.errors import RecordError
from ..record.summary import run_folders
from . import output
from .errors import CommandError, ExitCode, Problem
from .run_target import Where, find_run


def clean_command(*, target: str | None, completed: bool, force: bool, cwd: Path | None, run_root: Path | None) -> int:
    where = Where.of(cwd, run_root)
    if (target is None) == (not completed):
        raise CommandError("give a run (WORKFLOW/ID) or --completed, not both", Problem.USAGE)
    if target is not None:
        history = folder.read_history(find_run(target, where), ended_stages=False)
        output.result(_clean(history, force=force))
        return int(ExitCode.OK)
    kept = 0
    for paths in run_folders(where.root):
        try:
            history = folder.read_history(paths, ended_stages=False)
        except RecordError as problem:
            output.error(f"a run's record cannot be read: {problem}")
            kept += 1
            continue
        worktree = history.run.get("worktree")
        if history.status != "completed" or not worktree or not Path(worktree["path"]).is_dir():
            continue
        try:
            output.result(_clean(history, force=force))
        except CommandError as refused:
            output.error(str(refused))
            kept += 1
    return int(Problem.REFUSED.code if kept else ExitCode.OK)


def _clean(history: folder.History, *, force: bool) -> str:
    """The run's worktree removed, and what was done; CommandError when it is kept, saying why."""
    name = f"{history.run['workflow']}/{history.run['id']}"
    recorded = history.run.get("worktree")
    if not recorded:
        raise CommandError(
            f"run {name} works in {history.run['cwd']}, not in a worktree of its own: nothing to clean", Problem.USAGE
        )
    worktree = worktrees.Worktree.from_record(recorded)
    last = history.last
    if last is not None and last.is_live():
        raise CommandError(
            f"run {name} has a live attempt (attempt {last.number}, pid {last.pid}) working in {worktree.path}: "
            "cancel it or wait for it to end, then clean",
            Problem.REFUSED,
        )
    stays = f"its branch {worktree.branch} stays: git log {worktree.branch}"
    if not worktree.path.is_dir():
        _git(worktrees.prune, worktree)
        return f"run {name}'s worktree {worktree.path} was removed already; {stays}"
    if not force and worktrees.changed(worktree.path) is not False:
        raise CommandError(
            f"run {name}'s worktree {worktree.path} has changes nobody committed: commit them on {worktree.branch}, "
            "or give --force to throw them away",
            Problem.REFUSED,
        )
    _git(lambda tree: worktrees.remove(tree, force=force), worktree)
    return f"removed run {name}'s worktree {worktree.path}; {stays}"


def _git(do: Callable[[worktrees.Worktree], None], worktree: worktrees.Worktree) -> None:
    try:
        do(worktree)
    except worktrees.GitError as error:
        raise CommandError(f"git could not remove {worktree.path}: {error}", Problem.REFUSED) from None
