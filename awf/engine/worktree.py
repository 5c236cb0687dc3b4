"""A run's git worktree: made when the run is, found again by every later attempt, and made again
from the run's branch when someone removed it.

A run started with `--worktree` works in `.awf/worktrees/{workflow}/{id}` of the repository it
was started in, on the branch `awf/{workflow}/{id}` made from the base commit. The run line keeps
all four (`worktree`), so a continue, a redo, a wake and a placed attempt find the same ones.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..record.entries import WorktreeFields
from ..record.files import ensure_dir, write_atomic
from .errors import Refusal

WORKTREES_DIR = Path(".awf") / "worktrees"


class GitError(Exception):
    """git refused or failed: its own message, cut to its last lines."""


class Gone(Exception):
    """The run's branch is gone: the attempt stops, naming it."""


@dataclass(frozen=True)
class Worktree:
    repository: Path
    path: Path
    branch: str
    base: str
    base_ref: str

    def as_record(self) -> WorktreeFields:
        return {
            "repository": str(self.repository),
            "path": str(self.path),
            "branch": self.branch,
            "base": self.base,
            "base_ref": self.base_ref,
        }

    @classmethod
    def from_record(cls, record: WorktreeFields) -> Worktree:
        return cls(
            Path(record["repository"]), Path(record["path"]), record["branch"], record["base"], record["base_ref"]
        )

    @property
    def lock(self) -> Path:
        """The lock of the folder the run works in: beside the worktree, where its agents cannot write."""
        return self.path.with_name(f"{self.path.name}.lock")


def git(*args: str, cwd: Path) -> str:
    """Run git in `cwd` and return what it printed; GitError with git's message when it fails."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        )
    except FileNotFoundError:
        raise GitError("git is not installed: install git, or run without --worktree") from None
    if done.returncode != 0:
        said = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise GitError("; ".join(said[-2:]) or f"git {args[0]} exited {done.returncode}")
    return done.stdout.strip()


def planned(start: Path, workflow: str, run_id: str, base_ref: str | None) -> tuple[Worktree, Path]:
    """The worktree a new run started in `start` gets, checked, before anything is made; and the
    folder the run works in there (the same place in it as `start` in its checkout).
    Refusal when `start` is in no repository, the base is no commit, or the branch or folder is taken."""
    try:
        top = Path(git("rev-parse", "--show-toplevel", cwd=start))
    except GitError as error:
        raise Refusal(
            f"--worktree needs a git repository, and {start} is in none ({error}); run git init, or drop --worktree"
        ) from None
    ref = base_ref or "HEAD"
    base = commit_of(top, ref)
    if not base:
        if base_ref is None:
            raise Refusal(
                f"--worktree makes a branch from the current commit, and {top} has none: commit once, or give --base"
            )
        raise Refusal(f"--base {base_ref} is not a commit of {top}: give a branch, a tag or a commit")
    path = top / WORKTREES_DIR / workflow / run_id
    branch = f"awf/{workflow}/{run_id}"
    if branch_exists(top, branch):
        raise Refusal(
            f"the branch {branch} exists already, from an earlier run of that id: "
            f"delete it (git branch -D {branch}) or give another --id"
        )
    if os.path.lexists(path):
        raise Refusal(
            f"{path} exists already, where run {workflow}/{run_id}'s worktree goes: move it away, or give another --id"
        )
    here = start.resolve().relative_to(top.resolve())
    return Worktree(top, path, branch, base, ref), path / here


def kept(worktree: Worktree, base_ref: str | None, run: str) -> None:
    """A continue's --base, checked against the run's: Refusal when it names another commit."""
    if base_ref is None or base_ref in (worktree.base_ref, worktree.base):
        return
    commit = commit_of(worktree.repository, base_ref)
    if commit != worktree.base:
        raise Refusal(
            f"run {run} was started with --base {worktree.base_ref} ({worktree.base[:12]}), not {base_ref}: "
            "a continue keeps the run's branch; drop --base to continue, or start a new run"
        )


def ensure(worktree: Worktree, *, first: bool) -> str | None:
    """The run's worktree, there and on its branch. Makes it on the first attempt; makes it again
    from the branch when it was removed, and says so (the returned notice). Raises Gone when the
    branch is gone or the folder holds something else, and GitError when git cannot make it."""
    repo, path, branch = worktree.repository, worktree.path, worktree.branch
    if path.is_dir() and not path.is_symlink() and (path / ".git").is_file():
        try:
            head = git("symbolic-ref", "--quiet", "HEAD", cwd=path)
        except GitError:
            head = ""
        if head == f"refs/heads/{branch}" and branch_exists(repo, branch):
            return None
        if not branch_exists(repo, branch):
            raise Gone(_gone_text(worktree))
        raise Gone(
            f"the run's worktree {path} is not on its branch {branch} (HEAD: {head or 'detached'}): "
            f"git -C {path} switch {branch}, then continue"
        )
    if os.path.lexists(path):
        raise Gone(f"{path}, where the run's worktree goes, is not a git worktree: move it away, then continue")
    _prepare_folder(repo)
    git("worktree", "prune", cwd=repo)  # a removed worktree's own entry would refuse the add
    if branch_exists(repo, branch):
        git("worktree", "add", "--quiet", str(path), branch, cwd=repo)
        return None if first else f"the run's worktree {path} was gone; made it again from its branch {branch}"
    if not first:
        raise Gone(_gone_text(worktree))
    git("worktree", "add", "--quiet", "-b", branch, str(path), worktree.base, cwd=repo)
    return None


def changed(path: Path) -> bool | None:
    """Whether the worktree has changes not committed; None when it cannot be read."""
    try:
        return bool(git("status", "--porcelain", "--untracked-files=normal", cwd=path))
    except GitError:
        return None


def remove(worktree: Worktree, *, force: bool) -> None:
    """The worktree removed through git, so `git worktree list` stays true; its branch stays."""
    args = ["worktree", "remove", *(["--force"] if force else []), str(worktree.path)]
    git(*args, cwd=worktree.repository)


def prune(worktree: Worktree) -> None:
    """git's own entry of a worktree someone removed, let go of."""
    git("worktree", "prune", cwd=worktree.repository)


def commit_of(repo: Path, ref: str) -> str:
    """The commit `ref` names in `repo`, or "" when it names none."""
    try:
        return git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", cwd=repo)
    except GitError:
        return ""


def branch_exists(repo: Path, branch: str) -> bool:
    try:
        git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=repo)
    except GitError:
        return False
    return True


def _gone_text(worktree: Worktree) -> str:
    return (
        f"the run's branch {worktree.branch} is gone: make it again where it was "
        f"(git branch {worktree.branch} COMMIT; it started at {worktree.base[:12]}), or start a new run"
    )


def _prepare_folder(repo: Path) -> None:
    """`.awf/worktrees`, kept out of the repository's `git status` as the runs are."""
    folder = repo / WORKTREES_DIR
    ensure_dir(folder)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        write_atomic(ignore, "*\n")
