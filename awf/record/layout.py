"""Where a run's files are: `{run root}/{workflow}/{id}/…`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

from .files import ensure_dir, write_atomic
from .roots import RUNS_DIR, home_of


def relative_cwd(cwd: Path, root: Path) -> str | None:
    """`cwd` relative to the folder holding the run root's `.awf` ("." for that folder itself),
    when it lies inside it; None when it lies elsewhere, or the run root is not an `.awf/runs`."""
    home = home_of(root)
    if home is None:
        return None
    try:
        return cwd.relative_to(home).as_posix()
    except ValueError:
        return None


@dataclass(frozen=True)
class WorkingFolder:
    """Where a run works, read off its run line and where its record lies now."""

    recorded: Path  # the absolute folder the run line names
    # The same place in the folder that holds the record now, when the record lies elsewhere than
    # where it was made: it moved, or is a copy, with its folder.
    moved: Path | None = None
    # `moved` is read off the run line's `cwd_relative`. Without it (a record made before runs
    # kept it), `moved` only guesses the run worked where its `.awf` was, for a person to confirm.
    certain: bool = False

    @property
    def now(self) -> Path:
        """Where an attempt works unless told otherwise: the moved place when that is certain."""
        return self.moved if self.moved is not None and self.certain else self.recorded


def working_folder(run_line: Mapping[str, Any], root: Path) -> WorkingFolder:
    """Where the run of `run_line`, kept under `root`, works. A run with its own worktree works
    where the run line says: the worktree's git data is in the repository it was made from."""
    recorded = Path(str(run_line["cwd"]))
    home = home_of(root)
    if home is None or run_line.get("worktree"):
        return WorkingFolder(recorded)
    relative = run_line.get("cwd_relative")
    if isinstance(relative, str):
        depth = len(PurePosixPath(relative).parts)
        made_home = recorded.parents[depth - 1] if depth else recorded
        if _same_folder(made_home, home):
            return WorkingFolder(recorded)
        return WorkingFolder(recorded, home / relative, certain=True)
    if _same_folder(recorded, home):
        return WorkingFolder(recorded)
    # A record made before `cwd_relative`: it moved with its folder if that folder is gone, or if
    # the folder still holds its own record of the run (the record here is a copy). Else it was
    # kept under a --run-root of that shape elsewhere, and works where it says.
    original = recorded / RUNS_DIR / str(run_line["workflow"]) / str(run_line["id"]) / "run.jsonl"
    if not recorded.is_dir() or original.exists():
        return WorkingFolder(recorded, home)
    return WorkingFolder(recorded)


def _same_folder(one: Path, other: Path) -> bool:
    if one == other:
        return True
    try:
        return os.path.samefile(one, other)  # one folder by two paths: a link, a bind mount
    except OSError:
        return False  # one of them is gone


def prepare_root(root: Path) -> None:
    """Create the run root; `.awf/runs` gets a `.gitignore` so git never sees the runs."""
    ensure_dir(root)
    ignore = root / ".gitignore"
    if not ignore.exists():
        write_atomic(ignore, "*\n")


@dataclass(frozen=True)
class RunPaths:
    """The files of one run. Each path is made once: they are asked for at every stage."""

    root: Path
    workflow: str
    id: str

    @cached_property
    def workflow_dir(self) -> Path:
        return self.root / self.workflow

    @cached_property
    def dir(self) -> Path:
        return self.root / self.workflow / self.id

    @cached_property
    def log(self) -> Path:
        return self.dir / "run.jsonl"

    @cached_property
    def stages(self) -> Path:
        return self.dir / "stages"

    def stage(self, name: str) -> Path:
        return self.stages / f"{name}.json"

    @cached_property
    def out(self) -> Path:
        return self.dir / "out.json"

    @cached_property
    def report(self) -> Path:
        return self.dir / "report.md"

    @cached_property
    def pid(self) -> Path:
        return self.dir / "attempt.pid"

    @cached_property
    def lock(self) -> Path:
        return self.dir / "attempt.lock"

    @cached_property
    def name(self) -> str:
        return f"{self.workflow}/{self.id}"
