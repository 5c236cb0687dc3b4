"""Workflows for the pane tests: exec agents in terminal panes (tests/agents/pane_agent.py).

`pane`: one stage, one agent; argv is pane_agent.py's. Environment: TURNS (turns of the agent,
default 1), IDLE (seconds), KEEP_PANE (set: keep the pane of an agent left unanswered),
SECOND (set: a second agent, answering, in the same workspace).
"""

import os
import sys
from pathlib import Path

import awf

AGENT = str(Path(__file__).resolve().parent / "pane_agent.py")
PLAN = {
    "type": "object",
    "required": ["branch", "steps"],
    "additionalProperties": False,
    "properties": {"branch": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}}},
}


def runtime(argv):
    return {
        "harness": "exec",
        "command": [sys.executable, AGENT, *argv],
        "placement": "pane",
        "idle": float(os.environ.get("IDLE", "5")),
        "keep_pane": bool(os.environ.get("KEEP_PANE")),
    }


@awf.workflow(name="pane", description="Ask an agent in a pane for a plan.", prepare=lambda argv: {"argv": argv})
async def pane(wf, argv):
    async def plan():
        agent = await wf.agents.open(key="planner", runtime=runtime(argv))
        values = []
        for number in range(int(os.environ.get("TURNS", "1"))):
            turn = await agent.run(prompt=f"Plan a fix for #212, part {number + 1}.", schema=PLAN)
            if not turn.outcome.answered:
                wf.stop(f"{turn.outcome.kind}: {turn.outcome.reason}")
            values.append(turn.outcome.value)
        if os.environ.get("SECOND"):
            other = await wf.agents.open(key="reviewer", runtime=runtime(["answer"]))
            turn = await other.run(prompt="Review the plan.", schema=PLAN)
            values.append(turn.outcome.value)
        return values

    return await wf.stage("plan", plan, result={"type": "array"})
