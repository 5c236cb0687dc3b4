"""Agents in tmux panes: an exec agent's turns pasted into its pane, answers through `awf answer`,
the recovery prompt typed into the same pane, a program that exits, and the panes closed after."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from panes_support import PaneProject, needs_tmux, pane_project

from awf.agents.harness import Harness
from awf.agents.harnesses.exec import ExecHarness
from awf.agents.panes import PaneHarness, workspace_title
from awf.agents.spec import AgentError, make_spec

pytestmark = needs_tmux


@pytest.fixture
def panes(tmp_path: Path) -> Iterator[PaneProject]:
    yield from pane_project(tmp_path)


def test_an_exec_agent_in_a_pane_reads_its_prompt_on_a_terminal_and_answers(panes: PaneProject) -> None:
    done = panes.run_pane("a1", "answer", more=("--json",))
    assert done.code == 0, done.stderr
    assert done.out["value"] == [{"branch": "fix/212", "steps": ["message 1", "on a terminal: True"]}]
    [seen] = panes.seen("a1")
    assert seen.startswith("Plan a fix for #212, part 1.\n") and "awf answer" in seen
    [pane] = panes.entries("a1", "pane")
    assert pane["workspace"] == "awf pane a1 #1" and pane["window"] == "planner"
    assert pane["server"] == panes.server and pane["multiplexer"] == "tmux"
    assert pane["command"][-1] == "answer" and pane["pid"] > 0
    [turn] = panes.entries("a1", "turn")
    assert turn["outcome"] == "answered" and turn["by"] == "awf answer"
    assert panes.workspaces() == [], "an attempt that ended closes its panes"
    logs = panes.awf("logs", "pane/a1")
    assert (
        f"agent planner: process {pane['pid']} in a pane, window planner of 'awf pane a1 #1' (tmux -L "
        f"{panes.server})" in logs.stdout
    )
    # The token awf answer needs is in a file only its owner reads, not on a command line.
    launcher = panes.agent_dir("a1").parent / ".panes" / "planner.sh"
    assert launcher.stat().st_mode & 0o077 == 0


def test_the_next_turn_is_typed_into_the_same_pane_and_a_second_agent_gets_a_window(panes: PaneProject) -> None:
    done = panes.run_pane("a2", "answer", env={"TURNS": "2", "SECOND": "1"}, more=("--json",))
    assert done.code == 0, done.stderr
    assert [value["steps"][0] for value in done.out["value"]] == ["message 1", "message 2", "message 1"]
    assert [seen.splitlines()[0] for seen in panes.seen("a2")] == [
        "Plan a fix for #212, part 1.",
        "Plan a fix for #212, part 2.",
    ]
    started = panes.entries("a2", "pane")
    # One program for the planner's two turns; the reviewer has a window of its own in the same workspace.
    assert [(entry["agent"], entry["turn"]) for entry in started] == [("planner", 1), ("reviewer", 1)]
    assert {entry["workspace"] for entry in started} == {"awf pane a2 #1"}
    assert started[0]["pane"] != started[1]["pane"]


def test_a_quiet_agent_is_nudged_in_its_pane_and_then_unanswered(panes: PaneProject) -> None:
    done = panes.run_pane("q", "quiet", env={"IDLE": "0.6"})
    assert done.code == 3, done.stderr
    first, second = panes.seen("q")
    assert first.startswith("Plan a fix for #212")
    # Typed into the same program, which has the prompt already: the recovery prompt alone.
    assert second.startswith("You stopped without giving awf your answer") and "Plan a fix" not in second
    assert len(panes.entries("q", "pane")) == 1
    [turn] = panes.entries("q", "turn")
    assert turn["outcome"] == "unanswered" and turn["nudged"] is True
    assert "↻ planner has not answered" in done.stderr
    assert panes.workspaces() == []


def test_a_program_that_exits_fails_the_turn_with_its_exit_status(panes: PaneProject) -> None:
    done = panes.run_pane("x", "exits", "3")
    assert done.code == 3, done.stderr
    [turn] = panes.entries("x", "turn")
    assert turn["outcome"] == "failed"
    assert "pane_agent.py exits 3 exited with code 3 in its pane; the end of its screen:" in turn["reason"]
    assert turn["reason"].endswith("giving up")
    assert panes.workspaces() == []


def test_a_program_that_exits_0_without_answering_is_started_again_for_the_recovery_prompt(panes: PaneProject) -> None:
    done = panes.run_pane("z", "exits", "0")
    assert done.code == 3, done.stderr
    _, second = panes.seen("z")
    # A new program has not seen the prompt: the recovery prompt comes with it.
    assert second.startswith("You stopped without giving awf your answer")
    assert "The turn's prompt was:\n\nPlan a fix for #212, part 1." in second
    started = panes.entries("z", "pane")
    assert len(started) == 2 and started[0]["pane"] == started[1]["pane"], "started again in the same pane"
    [turn] = panes.entries("z", "turn")
    assert turn["outcome"] == "unanswered"


def test_keep_pane_keeps_the_pane_of_an_unanswered_agent_until_the_next_pane_run(panes: PaneProject) -> None:
    done = panes.run_pane("k", "quiet", env={"IDLE": "0.5", "KEEP_PANE": "1"})
    assert done.code == 3, done.stderr
    assert panes.workspaces() == ["awf pane k #1"]
    [kept] = [entry for entry in panes.entries("k", "log") if "keep_pane" in entry["message"]]
    assert "awf attach pane/k planner" in kept["message"]
    screen = panes.tmux("capture-pane", "-p", "-t", "=awf pane k #1:")
    assert "[read message 2:" in screen.stdout, "its screen is there to read"
    # An answered agent's pane closes even so.
    done = panes.run_pane("k2", "answer", env={"KEEP_PANE": "1"})
    assert done.code == 0, done.stderr
    assert "awf pane k2 #1" not in panes.workspaces()
    # ... and that run opened a pane: the kept workspace, whose awf is gone, went with it.
    assert panes.workspaces() == []


def test_without_tmux_a_pane_agent_fails_its_turn_saying_to_install_it(panes: PaneProject) -> None:
    done = panes.run_pane("n", "answer", env={"PATH": str(Path(sys.executable).parent)})
    assert done.code == 3, done.stderr
    [turn] = panes.entries("n", "turn")
    assert turn["outcome"] == "failed"
    assert turn["reason"].startswith("exec: tmux is not installed (apt install tmux, brew install tmux)")
    assert 'leave out "placement": "pane"' in turn["reason"]


def test_a_placement_awf_does_not_know_and_a_harness_without_panes_are_refused(tmp_path) -> None:
    with pytest.raises(AgentError, match="placement 'window' is not one awf knows"):
        make_spec("a", {"harness": "exec", "command": ["x"], "placement": "window"}, None, None, tmp_path)

    class Headless(Harness):
        name = "headless"

    assert "cannot run in a pane" in PaneHarness(Headless()).spec_problem({"harness": "headless"})
    exec_runtime = {"harness": "exec", "command": ["x"], "placement": "pane"}
    in_pane = PaneHarness(ExecHarness())
    assert in_pane.spec_problem(exec_runtime) is None
    assert "keep_pane" in in_pane.spec_problem({**exec_runtime, "keep_pane": "yes"})
    assert "idle" in in_pane.spec_problem({**exec_runtime, "idle": 0})
    assert workspace_title("fix-issue/212", 1) == "awf fix-issue 212 #1"
