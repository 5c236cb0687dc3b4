"""Workflows for the agents' tests. `ask`: one stage, one exec agent; argv is the agent's
script (in this folder) or program, and its arguments. Environment: TURN_TIMEOUT (seconds),
TEXT_ANSWER (no schema: the answer is text), HARNESS (instead of exec), REOPEN (open the key
again with another command), NO_RECOVERY (a runtime with "recovery": false), NO_LABEL (the
turn has no label: the progress shows its prompt's first line), MAX_OUTPUT (the runtime's
"max_output")."""

import asyncio
import os
import sys
from pathlib import Path

import awf

HERE = Path(__file__).resolve().parent
PLAN = {
    "type": "object",
    "required": ["branch", "steps"],
    "additionalProperties": False,
    "properties": {"branch": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}}},
}


def runtime(argv):
    program, *rest = argv
    command = [sys.executable, str(HERE / program), *rest] if program.endswith(".py") else [program, *rest]
    spec = {"harness": os.environ.get("HARNESS", "exec"), "command": command}
    if os.environ.get("MAX_OUTPUT"):
        spec["max_output"] = int(os.environ["MAX_OUTPUT"])
    return {**spec, "recovery": False} if os.environ.get("NO_RECOVERY") else spec


@awf.workflow(name="ask", description="Ask one agent for a plan.", prepare=lambda argv: {"argv": argv})
async def ask(wf, argv):
    timeout = float(os.environ["TURN_TIMEOUT"]) if os.environ.get("TURN_TIMEOUT") else None
    schema = None if os.environ.get("TEXT_ANSWER") else PLAN

    async def plan():
        agent = await wf.agents.open(key="planner", runtime=runtime(argv))
        if os.environ.get("REOPEN"):
            await wf.agents.open(key="planner", runtime=runtime(["other.py"]))
        label = None if os.environ.get("NO_LABEL") else "plan #212"
        turn = await agent.run(prompt="Plan a fix for #212.", schema=schema, timeout=timeout, label=label)
        if not turn.outcome.answered:
            wf.stop(f"{turn.outcome.kind}: {turn.outcome.reason}")
        return turn.outcome.value

    return await wf.stage("plan", plan, result=schema or {"type": "string"})


@awf.workflow(name="pair", description="Two agents at once, each waiting.", prepare=lambda argv: {"folder": argv[0]})
async def pair(wf, folder):
    async def both():
        first = await wf.agents.open(key="first", runtime=runtime(["waits.py", f"{folder}/first.json"]))
        second = await wf.agents.open(key="second", runtime=runtime(["waits.py", f"{folder}/second.json"]))
        turns = await asyncio.gather(
            first.run(prompt="Say ok.", schema={"type": "object", "required": ["ok"]}),
            second.run(prompt="Say ok.", schema={"type": "object", "required": ["ok"]}),
        )
        return [str(turn.outcome) for turn in turns]

    return await wf.stage("both", both, result={"type": "array"})


@awf.workflow(name="twice", description="One agent, a turn between stages and one in a stage.")
async def twice(wf):
    agent = await wf.agents.open(key="noter", runtime=runtime(["turns.py"]))
    first = await agent.run(prompt="First.", schema={"type": "object"})

    async def second():
        turn = await agent.run(prompt="Second.", schema={"type": "object"})
        return [first.outcome.value, turn.outcome.value]

    return await wf.stage("second", second, result={"type": "array"})
