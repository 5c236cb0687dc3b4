"""Workflows the tests of awf.testing run in-process, with scripted agents."""

import asyncio

import awf

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
PLAN_VALUE = {"branch": "fix/212", "steps": ["Parse years before 1970.", "Add a test."]}
BUILT_VALUE = {"commit": "4be1c07"}
APPROVED = {"approved": True, "findings": []}
ISSUE = "#212: dates before 1970 parse as null"


@awf.workflow(
    name="fix-issue",
    description="Plan, build and review a fix.",
    version="1.0.0",
    prepare=lambda argv: {"issue": " ".join(argv)},
)
async def fix_issue(wf: awf.Context, issue: str):
    async def make_plan():
        planner = await wf.agents.open(key="planner", runtime="claude")
        turn = await planner.run(prompt=f"Plan a fix for {issue}. Name the branch you will work on.", schema=PLAN)
        if not turn.outcome.answered:
            wf.stop(f"no plan: {turn.outcome.reason}")
        return turn.outcome.value

    plan = await wf.stage("plan", make_plan, result=PLAN, summary=lambda p: p["branch"])

    async def build():
        builder = await wf.agents.open(key="builder", runtime="claude")
        prompt = "\n".join([f"On {plan['branch']}, carry out:", *plan["steps"], "Commit, and give the commit."])
        turn = await builder.run(prompt=prompt, schema=BUILT)
        if not turn.outcome.answered:
            wf.stop(f"not built: {turn.outcome.reason}")
        return turn.outcome.value

    built = await wf.stage("implement", build, result=BUILT, summary=lambda b: b["commit"])

    async def review():
        reviewer = await wf.agents.open(key="reviewer", runtime="codex")
        turn = await reviewer.run(
            prompt=f"Review commit {built['commit']} on {plan['branch']} as a fix for {issue}.",
            schema=VERDICT,
        )
        if not turn.outcome.answered:
            wf.stop(f"no review: {turn.outcome.reason}")
        return turn.outcome.value

    return await wf.stage("review", review, result=VERDICT)


@awf.workflow(name="ask", description="One turn of one agent, and what came of it.")
async def ask(
    wf: awf.Context,
    prompt: str = "Say hello.\nIn one word.",
    schema=None,
    timeout=None,
    label=None,
    key: str = "helper",
):
    """Asks once between stages and returns how the turn went, so a test can see every outcome."""
    agent = await wf.agents.open(
        key=key, runtime={"harness": "exec", "command": ["never-run"]}, instructions="Be brief."
    )
    turn = await agent.run(prompt=prompt, schema=schema, timeout=timeout, label=label)
    return {"outcome": turn.outcome.kind, "value": turn.outcome.value, "reason": turn.outcome.reason}


@awf.workflow(name="reviews", description="Several reviewers, each asked twice.")
async def reviews(wf: awf.Context, keys: list):
    async def review_all():
        found = {}
        for key in keys:
            reviewer = await wf.agents.open(key=key, runtime="codex")
            first = await reviewer.run(prompt=f"First look, {key}.", schema=VERDICT)
            second = await reviewer.run(prompt=f"Second look, {key}.", schema=VERDICT)
            found[key] = [first.outcome.kind, second.outcome.kind]
        return found

    return await wf.stage("review", review_all, result={"type": "object"})


@awf.workflow(name="remembers", description="Keeps the branch in a variable set inside a stage.")
async def remembers(wf: awf.Context):
    """The mistake the seeds warn of: a variable assigned inside a stage, unset once it is reused."""
    found = {}

    async def plan():
        found["branch"] = "fix/7"
        return {"doc": "plan.md"}

    await wf.stage("plan", plan, result={"type": "object"})

    async def build():
        return f"built on {found['branch']}"

    return await wf.stage("build", build, result={"type": "string"})


@awf.workflow(name="returns", description="Returns from each stage what later stages need.")
async def returns(wf: awf.Context):
    async def plan():
        return {"branch": "fix/7"}

    plan_value = await wf.stage("plan", plan, result={"type": "object"})

    async def build():
        return f"built on {plan_value['branch']}"

    return await wf.stage("build", build, result={"type": "string"})


@awf.workflow(name="checks", description="A check between stages.")
async def checks(wf: awf.Context):
    async def plan():
        agent = await wf.agents.open(key="planner", runtime="claude")
        turn = await agent.run(prompt="Plan it.", schema={"type": "object"})
        return turn.outcome.value

    plan = await wf.stage("plan", plan, result={"type": "object"})
    if not plan.get("ok"):
        wf.stop("the plan is not good enough")  # between stages: a continue checks the same value again
    return await wf.stage("build", lambda: _done(), result={"type": "string"})


async def _done():
    return "built"


@awf.workflow(name="breaks", description="A stage that raises.")
async def breaks(wf: awf.Context):
    async def work():
        wf.log("about to break", step=1)
        raise ValueError("the parser broke")

    return await wf.stage("parse", work, result={"type": "string"})


@awf.workflow(name="sleeps", description="Code that takes its time between stages.")
async def sleeps(wf: awf.Context, seconds: float):
    await asyncio.sleep(seconds)
    return "slept"
