"""awf.testing runs a workflow with `worktree=True` in a scratch repository of its own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import awf
from awf.testing import run_workflow


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, check=True).stdout.strip()


def commit_a_note() -> str:
    Path("note.txt").write_text("from the run\n")
    git(Path(), "add", "note.txt")
    git(Path(), "commit", "-qm", "the run's note")
    return os.getcwd()


@awf.workflow(name="noting", version="1.0.0", worktree=True)
async def noting(wf):
    return await wf.stage("note", commit_a_note, result={"type": "string"})


def test_a_worktree_workflow_runs_in_a_worktree_of_a_scratch_repository_on_its_own_branch(
    monkeypatch: pytest.MonkeyPatch,
):
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "t")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "t@example.com")
    run = run_workflow(noting)
    assert run.ending.outcome == "completed"
    worktree = Path(run.value)
    repository = worktree.parents[3]
    assert worktree == repository / ".awf" / "worktrees" / "noting" / worktree.name
    branch = f"awf/noting/{worktree.name}"
    assert git(repository, "log", "--format=%s", branch).splitlines() == [
        "the run's note",
        "scratch repository of awf.testing",
    ]
    assert not (repository / "note.txt").exists()  # the repository's own checkout is untouched
    assert run.out["worktree"]["branch"] == branch
