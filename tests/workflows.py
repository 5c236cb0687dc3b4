"""Workflow files the CLI tests write into their project folder.

THREE has three stages whose behaviour on each attempt comes from files the test writes
(`mode-{stage}` holding ok, throw, stop, hang or slow-cleanup), so the code stays the same
between attempts, as in a real continue. Each stage's work leaves `ran-{stage}-{attempt}`.
"""

THREE = """
import asyncio
from pathlib import Path

import awf

STRING = {"type": "string"}


def mode(stage):
    file = Path(f"mode-{stage}")
    return file.read_text().strip() if file.exists() else "ok"


async def act(wf, stage):
    how = mode(stage)
    Path(f"ran-{stage}-{wf.attempt}").touch()
    if how == "throw":
        raise RuntimeError(f"{stage} broke")
    if how == "stop":
        wf.stop(f"{stage} needs a person")
    if how == "hang":
        Path(f"in-{stage}").touch()
        await asyncio.sleep(3600)
    if how == "slow-cleanup":
        try:
            Path(f"in-{stage}").touch()
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            Path(f"cleaning-{stage}").touch()
            await asyncio.sleep(3600)
    return f"{stage} by attempt {wf.attempt}"


@awf.workflow(name="three", description="Three stages.", version="1.0.0")
async def three(wf):
    plan = await wf.stage("plan", lambda: act(wf, "plan"), result=STRING, summary=lambda v: v)
    if Path("stop-between").exists():
        wf.stop(f"the plan is not good enough: {plan}")
    built = await wf.stage("implement", lambda: act(wf, "implement"), result=STRING)
    review = await wf.stage("review", lambda: act(wf, "review"), result=STRING)
    return {"plan": plan, "implement": built, "review": review}
"""

# Three stages whose work appends its name to ran.txt, so a test can count how often each ran;
# b stops while stop-b exists. The first stage is named ".x": legal, and easy to take for a temp file.
COUNTED = """
import asyncio
from pathlib import Path

import awf

STRING = {"type": "string"}


async def work(wf, stage):
    with open("ran.txt", "a") as side:
        side.write(stage + "\\n")
    if stage == "b" and Path("stop-b").exists():
        wf.stop("b waits for stop-b to go")
    while stage == "b" and Path("hold-b").exists():
        await asyncio.sleep(0.05)
    return f"{stage} by attempt {wf.attempt}"


@awf.workflow(name="counted", description="Three counted stages.", version="1.0.0")
async def counted(wf):
    x = await wf.stage(".x", lambda: work(wf, ".x"), result=STRING)
    b = await wf.stage("b", lambda: work(wf, "b"), result=STRING)
    c = await wf.stage("c", lambda: work(wf, "c"), result=STRING)
    return [x, b, c]
"""

# A stage whose work blocks the event loop: time.sleep, with no await. block-next marks whether
# the stage after it was ever entered.
BLOCKING = """
import time
from pathlib import Path

import awf


async def block():
    Path("in-block").touch()
    time.sleep(float(Path("seconds").read_text()))
    return "done"


async def after():
    Path("entered-next").touch()


@awf.workflow(name="blocking", description="A stage that blocks.", version="1.0.0")
async def blocking(wf):
    await wf.stage("block", block, result={"type": "string"})
    await wf.stage("next", after)
"""

# A stage, then a wait for an event: a run of it parks after open until ci is sent.
PARKED = """
import awf


@awf.workflow(name="parked", description="A stage, then a wait for ci.", version="1.0.0",
              events={"ci": {"type": "object"}, "note": None})
async def parked(wf: awf.Context):
    opened = await wf.stage("open", lambda: {"mr": 42}, result={"type": "object"})
    ci = await wf.events.receive("ci")
    return await wf.stage("merge", lambda: f"merged {opened['mr']}: {ci.value}", result={"type": "string"})
"""
