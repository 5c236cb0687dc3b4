"""Where a run's files are: `{run root}/{workflow}/{id}/…`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .files import ensure_dir, write_atomic

RUNS_DIR = Path(".awf") / "runs"


def run_root_for(cwd: Path, run_root: Path | None) -> Path:
    """The folder that holds the runs: `--run-root`, or `.awf/runs` under the run's cwd."""
    return (run_root if run_root is not None else cwd / RUNS_DIR).absolute()


def root_problem(root: Path, given: bool) -> str | None:
    """What is wrong with a run root that is a file, or lies under one; None when it can be one.

    `given`: the root came from --run-root, so the message names the flag.
    """
    where = "--run-root" if given else "the run root"
    for folder in (root, *root.parents):
        if folder.exists():
            if folder.is_dir():
                return None
            return f"{where} {root}: {folder} is a file, not a folder; give a folder for the runs"
    return None


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
