"""Plan, build and review a fix, with three agents: a planner, a builder and a reviewer.

Here the agents are small scripts in agents/, run by the `exec` runtime, so the example needs
no login and costs nothing. Give a stage's agent `runtime="claude"` or `runtime="codex"` and
the workflow is the same: only who answers changes. Each stage's result and each agent's answer
is a pydantic model (`pip install 'awf[pydantic]'`): `plan.branch` is checked by your type
checker, and the record holds plain JSON.

    awf run fix_issue.py --id 212 -- "#212: dates before 1970 parse as null"
    awf run fix_issue.py --id 212 --continue
"""

import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

import awf

AGENTS = Path(__file__).resolve().parent / "agents"


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")  # an answer with a field the plan does not have is refused
    branch: str
    steps: list[str]


class Built(BaseModel):
    model_config = ConfigDict(extra="forbid")
    commit: str
    summary: str


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    approved: bool
    findings: list[str]


def script(name: str) -> dict[str, object]:
    """An agent that is a Python script: it reads its prompt on stdin and answers with `awf answer`."""
    return {"harness": "exec", "command": [sys.executable, str(AGENTS / name)]}


@awf.workflow(
    name="fix-issue",
    description="Plan, build and review a fix.",
    version="1.0.0",
    prepare=lambda argv: {"issue": " ".join(argv)},
    present=lambda verdict: "approved" if verdict.approved else "changes asked: " + "; ".join(verdict.findings),
)
async def fix_issue(wf: awf.Context, issue: str) -> Verdict:
    async def make_plan() -> Plan:
        planner = await wf.agents.open(key="planner", runtime=script("planner.py"))
        turn = await planner.run(
            prompt=f"Plan a fix for {issue}. Name the branch you will work on.", schema=Plan, timeout=120
        )
        if not turn.outcome.answered:
            wf.stop(f"no plan: {turn.outcome.reason}")
        return turn.outcome.value

    plan = await wf.stage("plan", make_plan, result=Plan, summary=lambda p: p.branch)

    async def build() -> Built:
        builder = await wf.agents.open(key="builder", runtime=script("builder.py"))
        prompt = "\n".join([f"On {plan.branch}, carry out:", *plan.steps, "Commit, and give the commit."])
        turn = await builder.run(prompt=prompt, schema=Built, timeout=120)
        if not turn.outcome.answered:
            wf.stop(f"not built: {turn.outcome.reason}")
        return turn.outcome.value

    built = await wf.stage("implement", build, result=Built, summary=lambda b: f"{b.commit} {b.summary}")

    async def review() -> Verdict:
        reviewer = await wf.agents.open(key="reviewer", runtime=script("reviewer.py"))
        # A continue's agents are new: the prompt names everything the reviewer needs.
        turn = await reviewer.run(
            prompt=f"Review commit {built.commit} on {plan.branch} as a fix for {issue}.",
            schema=Verdict,
            timeout=120,
        )
        if not turn.outcome.answered:
            wf.stop(f"no review: {turn.outcome.reason}")
        return turn.outcome.value

    return await wf.stage(
        "review",
        review,
        result=Verdict,
        summary=lambda v: "approved" if v.approved else f"{len(v.findings)} findings",
    )
