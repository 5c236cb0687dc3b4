"""The seeds' fix-issue workflow in Python, its results pydantic models, with exec agents that are
small scripts."""

import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

import awf

HERE = Path(__file__).resolve().parent


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    branch: str
    steps: list[str]


class Built(BaseModel):
    model_config = ConfigDict(extra="forbid")
    commit: str


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    approved: bool
    findings: list[str]


def script(name: str) -> dict[str, object]:
    return {"harness": "exec", "command": [sys.executable, str(HERE / name)]}


@awf.workflow(
    name="fix-issue",
    description="Plan, build and review a fix.",
    version="1.0.0",
    prepare=lambda argv: {"issue": " ".join(argv)},
)
async def fix_issue(wf: awf.Context, issue: str) -> Verdict:
    async def make_plan() -> Plan:
        planner = await wf.agents.open(key="planner", runtime=script("fix_planner.py"))
        turn = await planner.run(prompt=f"Plan a fix for {issue}. Name the branch you will work on.", schema=Plan)
        if not turn.outcome.answered:
            wf.stop(f"no plan: {turn.outcome.reason}")
        return turn.outcome.value

    plan = await wf.stage("plan", make_plan, result=Plan, summary=lambda p: p.branch)

    async def build() -> Built:
        builder = await wf.agents.open(key="builder", runtime=script("fix_builder.py"))
        prompt = "\n".join([f"On {plan.branch}, carry out:", *plan.steps, "Commit, and give the commit."])
        turn = await builder.run(prompt=prompt, schema=Built)
        if not turn.outcome.answered:
            wf.stop(f"not built: {turn.outcome.reason}")
        return turn.outcome.value

    built = await wf.stage("implement", build, result=Built, summary=lambda b: b.commit)

    async def review() -> Verdict:
        reviewer = await wf.agents.open(key="reviewer", runtime=script("fix_reviewer.py"))
        # A continue's agents are new: the prompt names everything the reviewer needs.
        turn = await reviewer.run(
            prompt=f"Review commit {built.commit} on {plan.branch} as a fix for {issue}.",
            schema=Verdict,
        )
        if not turn.outcome.answered:
            wf.stop(f"no review: {turn.outcome.reason}")
        return turn.outcome.value

    return await wf.stage("review", review, result=Verdict)
