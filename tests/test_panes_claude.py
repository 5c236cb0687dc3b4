"""The real `claude` in a tmux pane, against the fake model: the prompt pasted into Claude Code's
own terminal UI, the answer given through `awf answer` from its shell tool, the next turn typed
into the same pane. Its first-run questions are answered by its config file, not by keystrokes.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Project
from fakemodel import FakeModel, Shell, Text
from fakemodel.clis import FAKE_KEY, base_env, claude_env, require
from panes_support import PaneProject, needs_tmux, pane_project

pytestmark = needs_tmux

PLAN = {"branch": "fix/212", "steps": ["parse years before 1970"]}
AGAIN = {"branch": "fix/212", "steps": ["keep the sign of the year"]}

WORKFLOW = """
import os

import awf

PLAN = {
    "type": "object",
    "required": ["branch", "steps"],
    "additionalProperties": False,
    "properties": {"branch": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}}},
}


@awf.workflow(name="ask", description="Ask claude, in a pane, for a plan twice.")
async def ask(wf):
    async def plan():
        agent = await wf.agents.open(key="planner", instructions="You plan fixes.", runtime={
            "harness": "claude", "placement": "pane", "idle": 20})
        values = []
        for prompt in ("Plan a fix for #212.", "Plan it once more."):
            turn = await agent.run(prompt=prompt, schema=PLAN, timeout=90)
            if not turn.outcome.answered:
                wf.stop(f"{turn.outcome.kind}: {turn.outcome.reason}")
            values.append(turn.outcome.value)
        return values

    return await wf.stage("plan", plan, result={"type": "array"})
"""


def answer(value: Any) -> Shell:
    return Shell("awf answer " + shlex.quote(json.dumps(value)))


@pytest.fixture
def panes(tmp_path: Path) -> Iterator[PaneProject]:
    yield from pane_project(tmp_path / "work")


def configured_home(home: Path, cwd: Path) -> None:
    """What a person answers on Claude Code's first start, written down: onboarding done, the API
    key approved, the project's folder trusted."""
    home.mkdir(parents=True, exist_ok=True)
    config = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [FAKE_KEY[-20:]], "rejected": []},
        "projects": {str(cwd): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
    }
    (home / ".claude.json").write_text(json.dumps(config))


def test_claude_in_a_pane_answers_through_awf_answer_and_takes_its_next_turn_in_the_same_pane(
    panes: PaneProject,
) -> None:
    require("claude")
    panes.path.mkdir(parents=True, exist_ok=True)
    home = panes.path.parent / "home"
    configured_home(home, panes.path)
    workflow = panes.write("ask.py", WORKFLOW)
    with FakeModel() as model:
        model.script(answer(PLAN), Text("Done."), answer(AGAIN), Text("Done again."))
        env = {**base_env(), **claude_env(model.url, home), "NO_COLOR": "1", "AWF_TMUX_SOCKET": panes.server}
        panes.env = env
        done = Project.awf(panes, "run", str(workflow), "--id", "c1", "--json", timeout=150)

        assert done.code == 0, done.stderr
        assert done.out["value"] == [PLAN, AGAIN]
        conversation = model.conversation
        assert not model.unscripted, [request.text()[-400:] for request in model.unscripted]
        first = conversation[0].text()
        assert "Plan a fix for #212." in first and "You plan fixes." in first and "awf answer" in first
        # The second turn went to the same program: the model sees the first turn's words.
        second = next(request.text() for request in conversation if "Plan it once more." in request.text())
        assert "Plan a fix for #212." in second

    log = panes.log("ask", "c1")
    [pane] = [entry for entry in log if entry["kind"] == "pane"]
    assert Path(pane["command"][0]).name == "claude" and "--session-id" in pane["command"]
    assert pane["workspace"] == "awf ask c1 #1"
    turns = [entry for entry in log if entry["kind"] == "turn"]
    assert [(turn["outcome"], turn["by"], turn["nudged"]) for turn in turns] == [
        ("answered", "awf answer", False),
        ("answered", "awf answer", False),
    ]
    assert {turn["session"] for turn in turns} == {pane["command"][pane["command"].index("--session-id") + 1]}
    # Its session file gave each turn its tokens and cost: two model calls, at the fake's default usage.
    for turn in turns:
        assert turn["usage"]["input"] == 240 and turn["usage"]["output"] == 24, turn["usage"]
        assert turn["cost"] > 0 and "unreported" not in turn
    assert panes.workspaces() == []


def test_claude_in_a_pane_in_a_sandbox_starts_from_a_fresh_config_and_answers(panes: PaneProject) -> None:
    require("claude")
    panes.path.mkdir(parents=True, exist_ok=True)
    home = panes.path.parent / "home"
    home.mkdir(parents=True, exist_ok=True)  # a first start: the sandbox's config answers its questions
    workflow = panes.write("ask.py", WORKFLOW)
    with FakeModel() as model:
        model.script(answer(PLAN), Text("Done."), answer(AGAIN), Text("Done again."))
        panes.env = {**base_env(), **claude_env(model.url, home), "NO_COLOR": "1", "AWF_TMUX_SOCKET": panes.server}
        done = Project.awf(panes, "run", str(workflow), "--id", "s1", "--sandbox", "workspace", "--json", timeout=150)

    assert done.code == 0, done.stderr
    assert done.out["value"] == [PLAN, AGAIN]
    agent_dir = panes.run_dir("ask", "s1") / "agents" / "1" / "planner"
    assert "bwrap" in (agent_dir / "pane.sh").read_text()
    assert list((agent_dir / "home" / ".claude").glob("projects/*/*.jsonl")), "its transcript is in the fresh config"
    assert not (home / ".claude").exists()
