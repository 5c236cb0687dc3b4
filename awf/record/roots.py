"""Where runs are kept: the run root of a folder, and the workflow folders under it.

Kept apart from layout.py, and light: `awf runs` on a root that holds no runs answers from here
alone, before any of the record's reading code is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

RUNS_DIR = Path(".awf") / "runs"


def run_root_for(cwd: Path, run_root: Path | None) -> Path:
    """The folder that holds the runs: `--run-root`, or `.awf/runs` under the run's cwd."""
    return (run_root if run_root is not None else cwd / RUNS_DIR).absolute()


def home_of(root: Path) -> Path | None:
    """The folder a run root belongs to, the one holding its `.awf`; None for a --run-root of another shape."""
    return root.parent.parent if root.parts[-2:] == RUNS_DIR.parts else None


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


def workflow_names(root: Path) -> list[str]:
    """The workflows' folders under the run root, sorted: every folder but a hidden one (`.cache`);
    none when the root does not exist yet."""
    try:
        return sorted(entry.name for entry in os.scandir(root) if entry.is_dir() and not entry.name.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return []
