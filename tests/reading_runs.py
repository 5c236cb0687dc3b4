"""Real runs in every status, made once per test module by real `awf run` attempts.

One workflow, `steps`: plan, build, review. Its argument says how build goes: `complete`, `stop`,
`fail`, `wait` or `wait-stop` (it touches `ready-{id}` and waits for `go-{id}`, so a test can cancel it, kill
it or watch it live). A `hold-{id}` file makes the code between plan and build wait the same way.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from conftest import Project, Result, finish

STEPS = """
import asyncio
from pathlib import Path

import awf

PLAN = {"type": "object", "required": ["doc"], "properties": {"doc": {"type": "string"}}}
BUILT = {"type": "object", "required": ["branch"], "properties": {"branch": {"type": "string"}}}


async def wait_here(run_id):
    Path(f"ready-{run_id}").touch()
    while not Path(f"go-{run_id}").exists():
        await asyncio.sleep(0.02)


@awf.workflow(name="steps", description="Plan, build, review.", version="1.0.0",
              prepare=lambda argv: {"how": argv[0] if argv else "complete"})
async def steps(wf, how):
    async def plan():
        return {"doc": f"docs/{wf.run_id}.md"}

    await wf.stage("plan", plan, result=PLAN, summary=lambda p: p["doc"])
    if Path(f"hold-{wf.run_id}").exists():
        await wait_here(wf.run_id)
    wf.log(f"building the {how} way")

    async def build():
        if how == "stop":
            wf.stop("the builder gave no answer")
        if how == "fail":
            raise RuntimeError("the build broke")
        if how in ("wait", "wait-stop"):
            await wait_here(wf.run_id)
        if how == "wait-stop":
            wf.stop("told to stop after waiting")
        return {"branch": f"fix/{wf.run_id}"}

    built = await wf.stage("build", build, result=BUILT, summary=lambda b: b["branch"])

    async def review():
        return f"approved {built['branch']}"

    return await wf.stage("review", review, result={"type": "string"}, summary=str)
"""


def write_steps(project: Project) -> None:
    project.write("steps.py", STEPS)


def run(project: Project, run_id: str, how: str, *more: str) -> Result:
    return project.awf("run", "steps.py", "--id", run_id, *more, "--", how)


def start_waiting(project: Project, run_id: str, *args: str):
    """An attempt that has reached the wait in build (or between stages, with a hold file)."""
    ready = project.path / f"ready-{run_id}"
    ready.unlink(missing_ok=True)
    words = args or ("run", "steps.py", "--id", run_id, "--", "wait")
    process = project.start(*words)
    try:
        project.wait_for(ready)
    except AssertionError:
        process.kill()
        raise AssertionError(f"the attempt never got ready: {process.communicate()}") from None
    return process


def release(project: Project, run_id: str) -> None:
    (project.path / f"go-{run_id}").touch()


def kill_hard(process) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def make_world(project: Project) -> dict[str, object]:
    """steps/done completed, steps/stopped stopped twice, steps/failed failed, steps/cancelled by
    SIGINT, steps/crashed by kill -9, steps/timed timed-out, and steps/live still running."""
    write_steps(project)
    codes = {
        "done": run(project, "done", "complete").code,
        "stopped": run(project, "stopped", "stop").code,
        "failed": run(project, "failed", "fail").code,
        "timed": run(project, "timed", "wait", "--timeout", "1s").code,
    }
    codes["stopped-again"] = project.awf("run", "steps.py", "--id", "stopped", "--continue").code
    cancelled = start_waiting(project, "cancelled")
    os.kill(cancelled.pid, signal.SIGINT)
    codes["cancelled"] = finish(cancelled).code
    crashed = start_waiting(project, "crashed")
    kill_hard(crashed)
    time.sleep(0.01)
    live = start_waiting(project, "live")
    return {"codes": codes, "live": live}


def end_live(project: Project, process) -> None:
    release(project, "live")
    try:
        process.communicate(timeout=30)
    except Exception:
        process.kill()


def load_schema(name: str):
    import fastjsonschema

    text = (Path(__file__).parent.parent / "schemas" / name).read_text()
    return fastjsonschema.compile(json.loads(text))
