"""A project whose `awf run` reaches real agent CLIs, each pointed at the fake model server.

`point_clis_at` sets a project's environment for any workflow; `CliProject` adds the workflow
most CLI tests run (ASK: one agent asked for a plan, once or twice) and reads its turns.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from subprocess import Popen
from typing import Any

from conftest import Project, Result
from fakemodel import Shell, Usage
from fakemodel.clis import CliSetup, base_env, require
from panes_support import PaneProject

PLAN = {"branch": "fix/212", "steps": ["parse years before 1970"]}
AGAIN = {"branch": "fix/212", "steps": ["keep the sign of the year"]}
PROMPTS = ("Plan a fix for #212.", "Plan it once more.")

# AGENT_RUNTIME: the agent's runtime; TURNS: how many of PROMPTS it is asked; TURN_TIMEOUT: each
# turn's timeout; NEXT_TURN_MARK: a file the second turn waits for, while the test acts as a person
# would between the turns.
ASK = """
import asyncio
import json
import os

import awf

PLAN = {
    "type": "object",
    "required": ["branch", "steps"],
    "additionalProperties": False,
    "properties": {"branch": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}}},
}
PROMPTS = ("Plan a fix for #212.", "Plan it once more.")


@awf.workflow(name="ask", description="Ask one agent for a plan, once or twice.")
async def ask(wf):
    runtime = json.loads(os.environ["AGENT_RUNTIME"])
    timeout = float(os.environ.get("TURN_TIMEOUT", "90"))
    mark = os.environ.get("NEXT_TURN_MARK")

    async def plan():
        agent = await wf.agents.open(key="planner", runtime=runtime, instructions="You plan fixes.")
        values = []
        for prompt in PROMPTS[: int(os.environ.get("TURNS", "1"))]:
            while mark and values and not os.path.exists(mark):
                await asyncio.sleep(0.1)
            turn = await agent.run(prompt=prompt, schema=PLAN, timeout=timeout)
            if not turn.outcome.answered:
                wf.stop(f"{turn.outcome.kind}: {turn.outcome.reason}")
            values.append(turn.outcome.value)
        return values

    return await wf.stage("plan", plan, result={"type": "array"})
"""


def answer(value: Any, usage: Usage | None = None) -> Shell:
    """The model runs `awf answer` with the value as one argument (the form every CLI's rules allow)."""
    return Shell("awf answer " + shlex.quote(json.dumps(value)), usage=usage or Usage())


def cli_home(project: Project) -> Path:
    """Where the CLIs keep their config, sessions and state: a folder beside the project, the test's own."""
    return project.path.with_name(project.path.name + "-home")


def point_clis_at(
    project: Project, clis: Sequence[CliSetup], url: str, *, first_start: bool = False, patient: bool = False
) -> None:
    """Give the project the environment in which its runs reach each of `clis` (skipping the test
    when one is not installed), pointed at the model server at `url`, with their state in
    `cli_home(project)`. `first_start`: what each CLI's terminal UI asks on a first start in the
    project is answered in its config (for a pane). `patient`: see `CliSetup.env`."""
    home = cli_home(project)
    home.mkdir(parents=True, exist_ok=True)
    env = {**base_env(), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    if isinstance(project, PaneProject):
        env["AWF_TMUX_SOCKET"] = project.server
    for cli in clis:
        require(cli.name)
        env.update(cli.env(url, home, patient=patient))
        if first_start:
            cli.first_start(home, project.path)
    project.env = env


class CliProject:
    """A project whose `awf run` of ASK reaches a real agent CLI, pointed at the fake model.

    `runtime` is the agent's (by default the CLI's harness and nothing else); `flags` are given to
    every `awf run`.
    """

    def __init__(
        self,
        project: Project,
        cli: CliSetup,
        url: str,
        *,
        runtime: Mapping[str, Any] | None = None,
        first_start: bool = False,
        flags: Sequence[str] = (),
    ) -> None:
        self.project = project
        self.cli = cli
        self.runtime = dict(runtime or {"harness": cli.name})
        self.first_start = first_start
        self.flags = tuple(flags)
        self.home = cli_home(project)
        project.path.mkdir(parents=True, exist_ok=True)
        self.workflow = project.write("ask.py", ASK)
        self.point_at(url)

    def point_at(self, url: str) -> None:
        """Send the CLI to the model server at `url`."""
        point_clis_at(self.project, [self.cli], url, first_start=self.first_start)

    def _env(self, runtime: Mapping[str, Any] | None, turns: int, timeout: float) -> dict[str, str]:
        return {
            "AGENT_RUNTIME": json.dumps(runtime or self.runtime),
            "TURNS": str(turns),
            "TURN_TIMEOUT": str(timeout),
        }

    def run(
        self,
        run_id: str,
        runtime: Mapping[str, Any] | None = None,
        *,
        flags: Sequence[str] = (),
        turns: int = 1,
        timeout: float = 90,
        **env: str,
    ) -> Result:
        """`awf run` to its end: the agent is asked `turns` of PROMPTS, each turn within `timeout` seconds."""
        argv = ["run", str(self.workflow), "--id", run_id, *self.flags, *flags]
        return self.project.awf(*argv, env={**self._env(runtime, turns, timeout), **env}, timeout=300)

    def start(
        self, run_id: str, *, flags: Sequence[str] = (), turns: int = 1, timeout: float = 90, **env: str
    ) -> Popen[str]:
        """`awf run` in the background."""
        argv = ["run", str(self.workflow), "--id", run_id, *self.flags, *flags]
        return self.project.start(*argv, env={**self._env(None, turns, timeout), **env})

    def entries(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        """The run's lines of one kind (none while its record is not there yet)."""
        if not (self.project.run_dir("ask", run_id) / "run.jsonl").exists():
            return []
        return [entry for entry in self.project.log("ask", run_id) if entry["kind"] == kind]

    def turns(self, run_id: str) -> list[dict[str, Any]]:
        return self.entries(run_id, "turn")

    def turn(self, run_id: str) -> dict[str, Any]:
        """The run's one turn."""
        [turn] = self.turns(run_id)
        return turn
