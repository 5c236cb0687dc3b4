"""A crash of awf with agents in panes: the workspace stays open, the next attempt names it,
and the next run that opens a pane closes it."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import finish
from panes_support import WORKFLOW, PaneProject, needs_tmux, pane_project, wait_until

from awf.record.liveness import is_alive

pytestmark = needs_tmux
ASK = str(Path(__file__).parent / "agents" / "ask.py") + ":ask"


@pytest.fixture
def panes(tmp_path: Path) -> Iterator[PaneProject]:
    yield from pane_project(tmp_path)


def test_kill_9_leaves_the_workspace_which_the_next_attempt_names_and_the_next_pane_run_closes(
    panes: PaneProject,
) -> None:
    process = panes.start("run", WORKFLOW, "--id", "c", "--", "quiet", env={"IDLE": "600"})
    folder = panes.agent_dir("c")
    wait_until(lambda: (folder / "seen-1.txt").exists(), what="the agent reading its prompt")
    agent = int((folder / "pid").read_text())
    try:
        os.kill(process.pid, signal.SIGKILL)
        finish(process)
        assert panes.workspaces() == ["awf pane c #1"], "a crash leaves the panes open"
        assert is_alive(agent, None)

        # A run that opens no pane leaves them open: a person may be in them.
        headless = panes.awf("run", ASK, "--id", "h", "--", "answer.py", '{"branch": "b", "steps": []}')
        assert headless.code == 0, headless.stderr
        assert panes.workspaces() == ["awf pane c #1"]

        done = panes.awf("run", WORKFLOW, "--id", "c", "--continue", env={"PANE_MODE": "answer"})
        assert done.code == 0, done.stderr
        [pane] = [entry for entry in panes.entries("c", "pane") if entry["attempt"] == 1]
        named = [line for line in done.stderr.splitlines() if "workspace" in line or "in its pane" in line]
        assert named == [
            f"! attempt 1's agents' panes are still open in the workspace 'awf pane c #1' (tmux -L {panes.server}): "
            "look with `awf attach pane/c`; they close when the next run opens an agent in a pane",
            f"! agent planner of attempt 1 still runs in its pane (pid {pane['pid']}): it may still be changing files",
        ]
        assert done.stderr.index("workspace") < done.stderr.index("▸ plan")
        # The continue opened a pane, and closed the workspace of the attempt whose awf was gone.
        assert panes.workspaces() == []
        wait_until(lambda: not is_alive(agent, None), timeout=5, what="the crashed attempt's agent ending")
    finally:
        try:
            os.kill(agent, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_the_next_attempt_says_when_the_crashed_attempts_workspace_is_closed_already(panes: PaneProject) -> None:
    process = panes.start("run", WORKFLOW, "--id", "g", "--", "quiet", env={"IDLE": "600"})
    wait_until(lambda: (panes.agent_dir("g") / "seen-1.txt").exists(), what="the agent reading its prompt")
    os.kill(process.pid, signal.SIGKILL)
    finish(process)
    panes.tmux("kill-session", "-t", "=awf pane g #1")  # a person closed it
    done = panes.awf("run", WORKFLOW, "--id", "g", "--continue", env={"PANE_MODE": "answer"})
    assert done.code == 0, done.stderr
    assert "! attempt 1's agents had panes in the workspace 'awf pane g #1', closed since" in done.stderr
