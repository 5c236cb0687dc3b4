"""What the pane tests share: a project with a tmux server of its own, ended when the test ends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Project

WORKFLOW = str(Path(__file__).parent / "agents" / "in_pane.py")
needs_tmux = pytest.mark.skipif(
    shutil.which("tmux") is None,
    reason="tmux is not installed: apt-get install tmux (.ci/run installs every tool the tests use)",
)


class PaneProject(Project):
    """A project whose runs put their panes on a tmux server no other test uses."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.server = f"awf-test-{uuid.uuid4().hex[:12]}"
        self.env["AWF_TMUX_SOCKET"] = self.server

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.server, *args], capture_output=True, text=True, timeout=15)

    def workspaces(self) -> list[str]:
        done = self.tmux("list-sessions", "-F", "#{session_name}")
        return done.stdout.splitlines() if done.returncode == 0 else []

    def run_pane(self, run_id: str, *argv: str, env: dict[str, str] | None = None, more: tuple[str, ...] = ()):
        return self.awf("run", WORKFLOW, "--id", run_id, *more, "--", *argv, env=env)

    def agent_dir(self, run_id: str, attempt: int = 1, agent: str = "planner") -> Path:
        return self.run_dir("pane", run_id) / "agents" / str(attempt) / agent

    def seen(self, run_id: str, attempt: int = 1, agent: str = "planner") -> list[str]:
        folder = self.agent_dir(run_id, attempt, agent)
        count = len(list(folder.glob("seen-*.txt")))
        return [(folder / f"seen-{n}.txt").read_text() for n in range(1, count + 1)]

    def entries(self, run_id: str, kind: str) -> list[dict]:
        return [entry for entry in self.log("pane", run_id) if entry["kind"] == kind]

    def end_server(self) -> None:
        self.tmux("kill-server")
        folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (folder / self.server).unlink(missing_ok=True)


def pane_project(tmp_path: Path) -> Iterator[PaneProject]:
    """The body of each pane test file's `panes` fixture."""
    project = PaneProject(tmp_path)
    try:
        yield project
    finally:
        project.end_server()


def wait_until(check, timeout: float = 20, what: str = "the condition") -> None:
    until = time.monotonic() + timeout
    while not check():
        if time.monotonic() > until:
            raise AssertionError(f"{what} never came true")
        time.sleep(0.05)


PYTHON = sys.executable
