"""The real `gemini` in a tmux pane, against the fake model: the prompt pasted into Gemini CLI's
own terminal UI, the answer given through `awf answer` from its shell tool, the next turn typed
into the same pane, each turn's tokens read from its session file.
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
from fakemodel.clis import base_env, gemini_env, require, write_gemini_settings
from panes_support import PaneProject, needs_tmux, pane_project

pytestmark = needs_tmux

PLAN = {"branch": "fix/212", "steps": ["parse years before 1970"]}
AGAIN = {"branch": "fix/212", "steps": ["keep the sign of the year"]}

WORKFLOW = """
import awf

PLAN = {
    "type": "object",
    "required": ["branch", "steps"],
    "additionalProperties": False,
    "properties": {"branch": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}}},
}


@awf.workflow(name="ask", description="Ask gemini, in a pane, for a plan twice.")
async def ask(wf):
    async def plan():
        agent = await wf.agents.open(key="planner", instructions="You plan fixes.", runtime={
            "harness": "gemini", "model": "gemini-2.5-flash", "placement": "pane", "idle": 30})
        values = []
        for prompt in ("Plan a fix for #212.", "Plan it once more."):
            turn = await agent.run(prompt=prompt, schema=PLAN, timeout=150)
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


def test_gemini_in_a_pane_answers_through_awf_answer_and_takes_its_next_turn_in_the_same_pane(
    panes: PaneProject,
) -> None:
    require("gemini")
    panes.path.mkdir(parents=True, exist_ok=True)
    home = panes.path.parent / "home"
    write_gemini_settings(home)
    workflow = panes.write("ask.py", WORKFLOW)
    with FakeModel() as model:
        model.script(answer(PLAN), Text("Done."), answer(AGAIN), Text("Done again."))
        panes.env = {**base_env(), **gemini_env(model.url, home), "NO_COLOR": "1", "AWF_TMUX_SOCKET": panes.server}
        done = Project.awf(panes, "run", str(workflow), "--id", "g1", "--json", timeout=300)

        assert done.code == 0, done.stderr
        assert done.out["value"] == [PLAN, AGAIN]
        assert not model.unscripted, [request.text()[-400:] for request in model.unscripted]
        first = model.conversation[0].text()
        assert "Plan a fix for #212." in first and "You plan fixes." in first and "awf answer" in first
        # The second turn went to the same program: the model sees the first turn's words.
        second = next(request.text() for request in model.conversation if "Plan it once more." in request.text())
        assert "Plan a fix for #212." in second

    log = panes.log("ask", "g1")
    [pane] = [entry for entry in log if entry["kind"] == "pane"]
    assert Path(pane["command"][0]).name == "gemini" and "--session-id" in pane["command"]
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
