"""The temporary folders awf.testing makes: removed when they are done with, kept only when asked.

A run's folder must outlive `run_workflow` (the test reads its files, `run_twice` continues it), so
each folder is removed when the test that made it has passed (by the pytest plugin in
`awf.testing.plugin`), or when the process exits. A failed test keeps its folders and says where;
`AWF_KEEP_TEST_RUNS=1` keeps every one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KEEP = "AWF_KEEP_TEST_RUNS"

_made: list[Path] = []


def make(name: str) -> Path:
    """A new temporary folder for a run of workflow `name`."""
    folder = Path(tempfile.mkdtemp(prefix=f"awf-test-{name}-"))
    _made.append(folder)
    return folder


def make_repository(folder: Path) -> None:
    """Make `folder` a git repository with one empty commit: each run of a worktree workflow
    gets its worktree from that commit."""
    who = {"NAME": "awf.testing", "EMAIL": "awf.testing@localhost"}
    env = {
        **os.environ,
        **{f"GIT_{role}_{key}": value for role in ("AUTHOR", "COMMITTER") for key, value in who.items()},
    }
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "scratch repository of awf.testing"]):
        subprocess.run(["git", *args], cwd=folder, env=env, check=True, capture_output=True)


def keep_asked() -> bool:
    return os.environ.get(KEEP, "") not in ("", "0")


def take() -> list[Path]:
    """The folders made since the last take, handed over to the caller to remove or keep."""
    taken = list(_made)
    _made.clear()
    return taken


def remove(folders: list[Path]) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def kept_text(folders: list[Path]) -> str:
    listed = "\n".join(f"  {folder}" for folder in folders)
    return f"awf.testing kept the run folders it made ({KEEP}=1 keeps them always):\n{listed}"


@atexit.register
def _at_exit() -> None:
    """Outside pytest (or for folders no test took): remove them, or say where they are kept."""
    folders = take()
    if not folders:
        return
    if keep_asked():
        print(kept_text(folders), file=sys.stderr)
    else:
        remove(folders)
