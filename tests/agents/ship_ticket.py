"""The seeds' ship-ticket workflow (the Runs page) in Python, its results pydantic models, with exec
agents that are small scripts: the planner writes a plan, the builder builds it on a branch."""

import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

import awf

HERE = Path(__file__).resolve().parent


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    doc: str


class Built(BaseModel):
    model_config = ConfigDict(extra="forbid")
    branch: str
    summary: str


def script(name: str) -> dict[str, object]:
    return {"harness": "exec", "command": [sys.executable, str(HERE / name)]}


@awf.workflow(
    name="ship-ticket",
    description="Plan a ticket, then build it.",
    version="1.0.0",
    prepare=lambda argv: {"ticket": argv[0] if argv else ""},
    id=lambda args: args["ticket"],  # the run's id: one run per ticket
)
async def ship_ticket(wf: awf.Context, ticket: str) -> Built:
    async def make_plan() -> Plan:
        planner = await wf.agents.open(key="planner", runtime=script("ship_planner.py"))
        turn = await planner.run(prompt=f"Write an implementation plan for {ticket} in docs/{ticket}.md.", schema=Plan)
        if not turn.outcome.answered:
            wf.stop(f"planner: {turn.outcome.reason}")
        return turn.outcome.value

    plan = await wf.stage("plan", make_plan, result=Plan, summary=lambda p: p.doc)

    async def build() -> Built:
        builder = await wf.agents.open(key="builder", runtime=script("ship_builder.py"))
        # A fresh agent: the prompt names the plan.
        turn = await builder.run(prompt=f"Implement {plan.doc} on a new branch.", schema=Built)
        if not turn.outcome.answered:
            wf.stop(f"builder: {turn.outcome.reason}")
        return turn.outcome.value

    return await wf.stage("build", build, result=Built, summary=lambda b: b.branch)
