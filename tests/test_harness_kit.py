"""The harness kit: every harness states its capabilities truly, and a CLI's runtime options are
checked the same way for every CLI, when the agent is opened."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from conftest import Project

from awf.agents.harness import Capabilities, Harness, PaneProgram, Session
from awf.agents.kit import capability_problems
from awf.agents.registry import known, own_harness

OPEN = """
import json
import os

import awf


@awf.workflow(name="open", description="Open one agent and ask nothing of it.")
async def open_one(wf):
    async def work():
        await wf.agents.open(key="planner", runtime=json.loads(os.environ["AGENT_RUNTIME"]))
        return "opened"

    return await wf.stage("open", work)
"""


@pytest.mark.parametrize("name", known())
def test_every_harness_states_capabilities_that_agree_with_what_it_defines(name: str) -> None:
    assert capability_problems(own_harness(name)) == []


def test_a_harness_whose_capabilities_promise_what_it_does_not_define_is_named() -> None:
    class Boasting(Harness):
        name = "boasting"
        capabilities = Capabilities(
            sessions=True,
            answer_in_output=False,
            tokens=False,
            cost="priced",
            session_file=False,
            pane=True,
            pane_finish=False,
            sandbox_login=False,
        )

    class Modest(Harness):
        name = "modest"
        capabilities = Capabilities(
            sessions=False,
            answer_in_output=False,
            tokens=False,
            cost=None,
            session_file=False,
            pane=False,
            pane_finish=False,
            sandbox_login=False,
        )

        def pane_command(self, session: Session, env: Mapping[str, str]) -> PaneProgram:
            return PaneProgram(["sh"])

    class Silent(Harness):
        name = "silent"

    assert capability_problems(Boasting()) == [
        "the boasting harness states pane but does not define pane_command",
        "the boasting harness states a cost but no tokens",
    ]
    assert capability_problems(Modest()) == ["the modest harness does not state pane but defines pane_command"]
    assert capability_problems(Silent()) == [
        "the silent harness states no capabilities: give its class `capabilities = Capabilities(...)`"
    ]


@pytest.mark.parametrize(
    ("runtime", "problem"),
    [
        ({"harness": "claude", "model": ""}, '"model" is a model\'s name or alias ("sonnet", "opus", '),
        ({"harness": "codex", "model": 7}, '"model" is a model\'s name ("gpt-5.5"), or null for codex\'s own default'),
        ({"harness": "claude", "effort": "extreme"}, '"effort" is one of low, medium, high, xhigh, max, not '),
        ({"harness": "codex", "effort": 5}, '"effort" is a reasoning effort ("low", "medium", "high"), not 5'),
        ({"harness": "claude", "extra_args": "--verbose"}, '"extra_args" is a list of the CLI\'s own arguments'),
        ({"harness": "codex", "extra_args": ["-c", 1]}, '"extra_args" is a list of the CLI\'s own arguments'),
        ({"harness": "claude", "permission_mode": ""}, '"permission_mode" is a Claude Code permission mode'),
        ({"harness": "codex", "sandbox": "none"}, '"sandbox" is one of read-only, workspace-write, danger-full-access'),
        ({"harness": "opencode", "model": "gpt-5.5"}, '"model" is opencode\'s "provider/model" ("anthropic/gpt-5.5")'),
        ({"harness": "opencode", "retry_limit": 0}, '"retry_limit" is a number of seconds above zero, not 0'),
    ],
)
def test_a_cli_runtime_with_a_bad_option_fails_the_open_naming_the_option(
    project: Project, runtime: dict[str, Any], problem: str
) -> None:
    workflow = project.write("open.py", OPEN)
    done = project.awf("run", str(workflow), "--id", "bad", env={"AGENT_RUNTIME": json.dumps(runtime)})

    assert done.code == 1, done.stderr
    assert f"AgentError: agent planner: {problem}" in done.stderr
    assert not list((project.run_dir("open", "bad") / "agents").glob("*/planner/turn-*"))
