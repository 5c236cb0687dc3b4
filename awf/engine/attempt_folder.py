"""The folder an attempt works in: its lock, so no two runs work in one folder unawares, and the
run's worktree, there as the attempt starts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..record import folder_lock
from ..record.entries import RunLine
from ..record.layout import working_folder
from ..record.liveness import lock_is_held
from . import attempt_outcome
from .claim import Run
from .ending import AttemptEnd
from .errors import Refusal
from .observer import Observer
from .request import RunRequest

if TYPE_CHECKING:  # the worktree module is imported by the runs that have one
    from .worktree import Worktree


def lock_of(cwd: Path, worktree: Worktree | None, root: Path) -> tuple[Path, Path]:
    """The folder a run working in `cwd` shares with other runs, and that folder's lock file: in
    the folder's own `.awf` when the runs are kept in it, else (--run-root elsewhere) in the run root."""
    if worktree is not None:
        return worktree.path, worktree.lock
    where = folder_lock.checkout_of(cwd)
    if root.is_relative_to(where):
        return where, where / folder_lock.FOLDER_LOCK
    return where, folder_lock.in_run_root(root, where)


def take(run: Run) -> folder_lock.FolderLock:
    """The lock of the folder the run works in, held for the attempt; Refusal naming the run that holds it."""
    where, lock = lock_of(run.cwd, run.worktree, run.paths.root)
    try:
        return folder_lock.take(lock, where, run=run.paths.name, attempt=run.attempt)
    except folder_lock.FolderTaken as taken:
        raise Refusal(
            f"{in_use(where, taken.holder)}: two runs in one folder edit each other's files, so nothing was started.\n"
            "Give --worktree for a worktree of this run's own, --share-folder if this run's agents only read, "
            "or wait for that attempt to end"
        ) from None


def in_use(where: Path, holder: folder_lock.Holder | None) -> str:
    """`run fix/12 works in /repo (attempt 2, pid 4242 on host)`."""
    if holder is None:
        return f"another run's attempt is starting in {where}"
    return f"run {holder.run} works in {where} (attempt {holder.attempt}, pid {holder.pid} on {holder.host})"


def busy(run_line: RunLine, root: Path) -> str | None:
    """Why a run cannot start an attempt now: another run works in its folder; None when it may."""
    if run_line.get("share_folder"):
        return None
    recorded = run_line.get("worktree")
    worktree = None
    if recorded is not None:
        from .worktree import Worktree

        worktree = Worktree.from_record(recorded)
    where, lock = lock_of(working_folder(run_line, root).now, worktree, root)
    if not lock_is_held(lock):
        return None
    return in_use(where, folder_lock.read_holder(lock))


def ensure_worktree(request: RunRequest, run: Run, observer: Observer) -> AttemptEnd | None:
    """The run's worktree made, or made again from its branch (said as a notice); the stop the
    attempt ends with when its branch is gone, else None. Refusal when git cannot make it: no
    attempt is recorded, so the run's first attempt to get its worktree stays the one that makes
    its branch."""
    from . import worktree as worktrees

    assert run.worktree is not None
    first = run.history is None or not run.history.attempts
    try:
        notice = worktrees.ensure(run.worktree, first=first)
    except worktrees.GitError as error:
        raise Refusal(
            f"git could not make run {run.paths.name}'s worktree {run.worktree.path}: {error}\n"
            f"Nothing was started; fix it, then go on: {request.go_on(run.paths.id)}"
        ) from None
    except worktrees.Gone as gone:
        return AttemptEnd(
            attempt_outcome.STOPPED,
            attempt_outcome.exit_code(attempt_outcome.STOPPED),
            {},
            reason=str(gone),
            go_on=request.go_on(run.paths.id),
        )
    if notice:
        observer.notice(notice)
    return None
