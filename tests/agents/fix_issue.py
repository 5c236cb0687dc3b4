"""The seeds' fix-issue workflow in Python, with exec agents that are small scripts."""

import sys
from pathlib import Path

import awf

HERE = Path(__file__).resolve().parent
PLAN = {
    "type": "object",
    "required": ["branch", "steps"],
    "properties": {"branch": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}}},
}
BUILT = {"type": "object", "required": ["commit"], "properties": {"commit": {"type": "string"}}}
VERDICT = {
    "type": "object",
    "required": ["approved", "findings"],
    "properties": {"approved": {"type": "boolean"}, "findings": {"type": "array", "items": {"type": "string"}}},
}


def script(name):
    return {"harness": "exec", "command": [sys.executable, str(HERE / name)]}


@awf.workflow(
    name="fix-issue",
    description="Plan, build and review a fix.",
    version="1.0.0",
    prepare=lambda argv: {"issue": " ".join(argv)},
)
async def fix_issue(wf: awf.Context, issue: str):
    async def make_plan():
        planner = await wf.agents.open(key="planner", runtime=script("fix_planner.py"))
        turn = await planner.run(prompt=f"Plan a fix for {issue}. Name the branch you will work on.", schema=PLAN)
        if not turn.outcome.answered:
            wf.stop(f"no plan: {turn.outcome.reason}")
        return turn.outcome.value

    plan = await wf.stage("plan", make_plan, result=PLAN, summary=lambda p: p["branch"])

    async def build():
        builder = await wf.agents.open(key="builder", runtime=script("fix_builder.py"))
        prompt = "\n".join([f"On {plan['branch']}, carry out:", *plan["steps"], "Commit, and give the commit."])
        turn = await builder.run(prompt=prompt, schema=BUILT)
        if not turn.outcome.answered:
            wf.stop(f"not built: {turn.outcome.reason}")
        return turn.outcome.value

    built = await wf.stage("implement", build, result=BUILT, summary=lambda b: b["commit"])

    async def review():
        reviewer = await wf.agents.open(key="reviewer", runtime=script("fix_reviewer.py"))
        # A continue's agents are new: the prompt names everything the reviewer needs.
        turn = await reviewer.run(
            prompt=f"Review commit {built['commit']} on {plan['branch']} as a fix for {issue}.",
            schema=VERDICT,
        )
        if not turn.outcome.answered:
            wf.stop(f"no review: {turn.outcome.reason}")
        return turn.outcome.value

    return await wf.stage("review", review, result=VERDICT)
