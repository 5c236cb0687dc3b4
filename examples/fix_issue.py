"""Plan, build and review a fix, with three agents: a planner, a builder and a reviewer.

Here the agents are small scripts in agents/, run by the `exec` runtime, so the example needs
no login and costs nothing. Give a stage's agent `runtime="claude"` or `runtime="codex"` and
the workflow is the same: only who answers changes.

    awf run fix_issue.py --id 212 -- "#212: dates before 1970 parse as null"
    awf run fix_issue.py --id 212 --continue
"""

import sys
from pathlib import Path

import awf

AGENTS = Path(__file__).resolve().parent / "agents"

PLAN = {
    "type": "object",
    "required": ["branch", "steps"],
    "additionalProperties": False,
    "properties": {"branch": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}}},
}
BUILT = {
    "type": "object",
    "required": ["commit", "summary"],
    "additionalProperties": False,
    "properties": {"commit": {"type": "string"}, "summary": {"type": "string"}},
}
VERDICT = {
    "type": "object",
    "required": ["approved", "findings"],
    "additionalProperties": False,
    "properties": {"approved": {"type": "boolean"}, "findings": {"type": "array", "items": {"type": "string"}}},
}


def script(name: str) -> dict:
    """An agent that is a Python script: it reads its prompt on stdin and answers with `awf answer`."""
    return {"harness": "exec", "command": [sys.executable, str(AGENTS / name)]}


@awf.workflow(
    name="fix-issue",
    description="Plan, build and review a fix.",
    version="1.0.0",
    prepare=lambda argv: {"issue": " ".join(argv)},
    present=lambda verdict: "approved" if verdict["approved"] else "changes asked: " + "; ".join(verdict["findings"]),
)
async def fix_issue(wf: awf.Context, issue: str):
    async def make_plan():
        planner = await wf.agents.open(key="planner", runtime=script("planner.py"))
        turn = await planner.run(
            prompt=f"Plan a fix for {issue}. Name the branch you will work on.", schema=PLAN, timeout=120
        )
        if not turn.outcome.answered:
            wf.stop(f"no plan: {turn.outcome.reason}")
        return turn.outcome.value

    plan = await wf.stage("plan", make_plan, result=PLAN, summary=lambda p: p["branch"])

    async def build():
        builder = await wf.agents.open(key="builder", runtime=script("builder.py"))
        prompt = "\n".join([f"On {plan['branch']}, carry out:", *plan["steps"], "Commit, and give the commit."])
        turn = await builder.run(prompt=prompt, schema=BUILT, timeout=120)
        if not turn.outcome.answered:
            wf.stop(f"not built: {turn.outcome.reason}")
        return turn.outcome.value

    built = await wf.stage("implement", build, result=BUILT, summary=lambda b: f"{b['commit']} {b['summary']}")

    async def review():
        reviewer = await wf.agents.open(key="reviewer", runtime=script("reviewer.py"))
        # A continue's agents are new: the prompt names everything the reviewer needs.
        turn = await reviewer.run(
            prompt=f"Review commit {built['commit']} on {plan['branch']} as a fix for {issue}.",
            schema=VERDICT,
            timeout=120,
        )
        if not turn.outcome.answered:
            wf.stop(f"no review: {turn.outcome.reason}")
        return turn.outcome.value

    return await wf.stage(
        "review",
        review,
        result=VERDICT,
        summary=lambda v: "approved" if v["approved"] else f"{len(v['findings'])} findings",
    )
