"""What only `codex` does in a tmux pane, against the fake model: a codex a person quit, started
again on the same thread; its thread's id read off its screen; in a sandbox, its session read from
a fresh home. What every harness does in a pane is the conformance suite's (tests/harnesses).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_projects import AGAIN, PLAN, CliProject, answer
from fakemodel import FakeModel, Text
from fakemodel.clis import CODEX
from panes_support import PaneProject, needs_tmux, pane_project, wait_until

from awf.agents.harness import Session
from awf.agents.harnesses.codex import _InputBox

pytestmark = [needs_tmux, pytest.mark.harnesses]  # real CLIs: CI's harness step

IN_PANE = {"harness": "codex", "placement": "pane", "idle": 20}


@pytest.fixture
def panes(tmp_path: Path) -> Iterator[PaneProject]:
    yield from pane_project(tmp_path / "work")


def thread_of(home: Path) -> str:
    """The id of the one thread in Codex's session files."""
    [rollout] = home.glob("sessions/*/*/*/rollout-*.jsonl")
    return rollout.stem[-36:]


def test_codex_started_again_in_its_pane_resumes_its_thread(panes: PaneProject, model: FakeModel) -> None:
    mark = panes.path.parent / "next-turn"
    # The project a git checkout Codex trusts (its first start answered).
    codex = CliProject(panes, CODEX, model.url, runtime=IN_PANE, first_start=True)
    model.script(answer(PLAN), Text("Done."), answer(AGAIN), Text("Done again."))
    running = codex.start("x2", flags=["--json"], turns=2, NEXT_TURN_MARK=str(mark))
    try:
        wait_until(lambda: codex.turns("x2"), 60, "turn 1")
        [pane] = codex.entries("x2", "pane")
        # A person quits codex in its pane, between the turns.
        (panes.path.parent / "quit.txt").write_text("/quit")
        panes.tmux("load-buffer", "-b", "quit", str(panes.path.parent / "quit.txt"))
        panes.tmux("paste-buffer", "-d", "-b", "quit", "-t", pane["pane"])
        wait_until(lambda: "/quit" in panes.tmux("capture-pane", "-p", "-t", pane["pane"]).stdout, 10, "/quit")
        panes.tmux("send-keys", "-t", pane["pane"], "Enter")
        status = panes.run_dir("ask", "x2") / "agents" / "1" / ".panes" / "planner.status"
        wait_until(lambda: status.exists() and status.read_text().strip() == "0", 20, "codex to exit")
        mark.write_text("")
        out, err = running.communicate(timeout=90)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 0, err
    assert json.loads(out)["value"] == [PLAN, AGAIN]
    second = next(request.text() for request in model.conversation if "Plan it once more." in request.text())
    assert "Plan a fix for #212." in second

    thread = thread_of(codex.home)
    first, again = codex.entries("x2", "pane")
    assert first["pane"] == again["pane"]  # started again in the same pane
    assert again["command"][-2:] == ["resume", thread] and "developer_instructions" not in " ".join(again["command"])
    turns = codex.turns("x2")
    assert [(turn["outcome"], turn["session"]) for turn in turns] == [("answered", thread), ("answered", thread)]
    assert panes.workspaces() == []


# Codex 0.171.0's screens, as tmux captured them.
TRUST = """
  Folder access

  /tmp/cx/work

  Trust this folder? Codex can read, edit, and run files here, subject to your permission
  settings. Folder settings can run code automatically, even without a model request. Continue
  only if you trust these files. Your trust decision will be saved.

› 1. Trust and continue
  2. Back to Agent Command Center

  enter continue · esc back
"""
READY = """
  >_ OpenAI Codex (v0.171.0)
     /tmp/cx/work

› Ask Codex to do anything

  01a22a73-cac5-7630-bca2-ee58d4299606 · GPT-6.1-Sol default · /tmp/cx/work
  ← for agents · ? for shortcuts
"""


def test_codex_takes_input_only_once_its_input_box_is_up_and_gives_its_thread_id(tmp_path: Path) -> None:
    session = Session(
        key="planner",
        runtime={},
        instructions=None,
        cwd=tmp_path,
        dir=tmp_path,
        spawn_process=lambda *args, **kwargs: None,
    )
    ready = _InputBox(session)
    assert not ready(TRUST) and not ready("") and session.id is None
    assert ready(READY) and session.id == "01a22a73-cac5-7630-bca2-ee58d4299606"


def test_codex_in_a_pane_in_a_sandbox_works_from_a_fresh_home_and_awf_reads_its_session_there(
    panes: PaneProject, model: FakeModel
) -> None:
    codex = CliProject(panes, CODEX, model.url, runtime=IN_PANE, first_start=True)
    model.script(answer(PLAN), Text("Done."), answer(AGAIN), Text("Done again."))
    done = codex.run("s1", flags=["--sandbox", "workspace", "--json"], turns=2)

    assert done.code == 0, done.stderr
    assert done.out["value"] == [PLAN, AGAIN]
    agent_dir = panes.run_dir("ask", "s1") / "agents" / "1" / "planner"
    assert "sandbox/launch.py" in (agent_dir.parent / ".panes" / "planner.sh").read_text()
    fresh = agent_dir / "home" / ".codex"
    assert thread_of(fresh) and not list(codex.home.glob("sessions/*/*/*/rollout-*.jsonl"))
    turns = codex.turns("s1")
    assert [turn["outcome"] for turn in turns] == ["answered", "answered"]
    assert all(turn["usage"] and turn["usage"]["input"] > 0 for turn in turns), "tokens read off the fresh home"
    assert panes.workspaces() == []
