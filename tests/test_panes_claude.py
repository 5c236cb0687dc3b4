"""What only `claude` does in a tmux pane, against the fake model: in a sandbox, it starts from a
fresh config whose first-start questions awf answers. What every harness does in a pane is the
conformance suite's (tests/harnesses).
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
from fakemodel.clis import base_env, claude_env, require
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
