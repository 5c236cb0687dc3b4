"""What an agent is opened with: its key, its runtime, its instructions and its cwd."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..record.entries import RuntimeOptions
from ..record.names import agent_key_problem
from .sandbox.profile import Profile, ProfileError, from_spec

# Where an agent's program runs: headless (no terminal), or in a terminal pane (awf.agents.panes).
PLACEMENTS = ("headless", "pane")


class AgentError(Exception):
    """A workflow used an agent against its rules: a bad key or runtime, a key reopened with
    another spec, two turns of one agent at once. A bug in the workflow, not a turn's outcome."""


@dataclass(frozen=True)
class AgentSpec:
    """An agent as the workflow asked for it. Two opens of one key must ask for the same spec."""

    key: str
    runtime: RuntimeOptions  # always with a "harness"
    instructions: str | None
    cwd: Path
    sandbox: Profile | None = None  # what confines it: its own sandbox=, else the run's --sandbox

    @property
    def harness(self) -> str:
        return str(self.runtime["harness"])

    @property
    def model(self) -> str | None:
        model = self.runtime.get("model")
        return None if model is None else str(model)

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"runtime": self.runtime, "instructions": self.instructions, "cwd": str(self.cwd)}
        if self.sandbox is not None:
            record["sandbox"] = self.sandbox.as_record()
        return record


def make_spec(
    key: Any, runtime: Any, instructions: Any, cwd: Any, base: Path, sandbox: Any = None, run_sandbox: Any = None
) -> AgentSpec:
    """Check what `wf.agents.open` was given and put it in one form; AgentError when it is wrong.

    `sandbox` is what the workflow asked for this agent, `run_sandbox` the run's --sandbox profile."""
    problem = agent_key_problem(key) if isinstance(key, str) else f"an agent key is a string, not {key!r}"
    if problem:
        raise AgentError(problem)
    if instructions is not None and not isinstance(instructions, str):
        raise AgentError(f"agent {key}: instructions are a string, not {type(instructions).__name__}")
    where = base if cwd is None else (base / Path(cwd)).absolute()
    if not where.is_dir():
        raise AgentError(f"agent {key}: its cwd {where} is not a folder")
    return AgentSpec(key, normal_runtime(key, runtime), instructions, where, _sandbox(key, sandbox, run_sandbox, base))


def _sandbox(key: str, asked: Any, run: Profile | None, base: Path) -> Profile | None:
    """The agent's own profile, checked to be within the run's; the run's when it asks for none."""
    if asked is None:
        return run
    try:
        profile = from_spec(asked, base, f"agent {key}'s sandbox")
    except ProfileError as error:
        raise AgentError(str(error)) from None
    if run is None:
        return profile
    if profile is None:
        raise AgentError(f"agent {key}: sandbox='none' asks for more than the run's --sandbox {run.name} allows")
    beyond = profile.beyond(run)
    if beyond:
        raise AgentError(f"agent {key}'s sandbox asks for more than the run's allows: " + "; ".join(beyond))
    return replace(profile, limits=profile.limits.within(run.limits))  # never looser than the run's


def normal_runtime(key: str, runtime: Any) -> RuntimeOptions:
    """`"claude"` is `{"harness": "claude"}`; a dict must name its harness and hold only JSON."""
    if isinstance(runtime, str) and runtime:
        return {"harness": runtime}
    if not isinstance(runtime, Mapping):
        raise AgentError(
            f'agent {key}: runtime is a harness\'s name ("claude", "codex") or a dict such as '
            f'{{"harness": "exec", "command": [...]}}, not {runtime!r}'
        )
    harness = runtime.get("harness")
    if not isinstance(harness, str) or not harness:
        raise AgentError(f'agent {key}: runtime {dict(runtime)!r} names no harness: give it "harness": NAME')
    placement = runtime.get("placement", "headless")
    if placement not in PLACEMENTS:
        raise AgentError(
            f'agent {key}: placement {placement!r} is not one awf knows: "headless" (the default) or "pane" '
            "(a terminal pane you can watch and type into)"
        )
    if not isinstance(runtime.get("recovery", True), bool):
        raise AgentError(
            f'agent {key}: "recovery" is true (the default: an agent that stops without answering gets one '
            f"recovery prompt) or false (the turn ends unanswered), not {runtime['recovery']!r}"
        )
    try:
        # Recorded in run.jsonl and compared between opens, so it must be plain JSON.
        plain: dict[str, Any] = json.loads(json.dumps(dict(runtime), allow_nan=False))
        return plain
    except (TypeError, ValueError) as error:
        raise AgentError(f"agent {key}: runtime must hold only JSON values: {error}") from None
