"""What harnesses share: the capabilities each states, and a base for a harness that runs an agent's CLI.

A harness for a coding agent's CLI (claude, codex, ...) subclasses `AgentCli`: it names its
program, the variable that points awf at another copy of it, how to install it and the version
awf is tested with; `AgentCli` then finds the program, checks the runtime options every such
CLI takes ("model", "effort", "extra_args") and words how the program broke. Every harness, of a
CLI or not, states its `Capabilities`. docs/harnesses.md is the contract in full.

What a delivery shares lives beside this module: `headless` runs the CLI for one delivery and
tails its JSON lines, `panes` runs it in a terminal pane, `usage` reads a session file's model
calls and prices tokens (genai-prices), and `turn_usage` here makes the `usage` a turn records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..record.entries import RuntimeOptions
from .harness import Capabilities, Harness, Session
from .headless import Ran, failure, find_program


def capability_problems(harness: Harness) -> list[str]:
    """Where a harness's stated capabilities and the methods it defines disagree (none: they agree)."""
    stated = getattr(harness, "capabilities", None)
    if not isinstance(stated, Capabilities):
        return [f"the {harness.name} harness states no capabilities: give its class `capabilities = Capabilities(...)`"]
    kind = type(harness)

    def defines(*methods: str) -> bool:
        return all(getattr(kind, method) is not getattr(Harness, method) for method in methods)

    problems = []
    for capability, methods in (
        ("pane", ("pane_command",)),
        ("pane_finish", ("pane_watch",)),
        ("session_file", ("session_file", "session_usage")),
        ("sandbox_login", ("sandbox_home", "endpoints")),
    ):
        if getattr(stated, capability) != defines(*methods):
            says = "states" if getattr(stated, capability) else "does not state"
            does = "does not define" if getattr(stated, capability) else "defines"
            problems.append(f"the {harness.name} harness {says} {capability} but {does} {', '.join(methods)}")
    if stated.pane_finish and not stated.pane:
        problems.append(f"the {harness.name} harness states pane_finish but not pane")
    if stated.cost is not None and not stated.tokens:
        problems.append(f"the {harness.name} harness states a cost but no tokens")
    return problems


class AgentCli(Harness):
    """The base of a harness that runs a coding agent's CLI.

    It finds the program (the path in `variable`, else `program` on PATH), checks the options every
    such runtime takes (`options_problem` checks the CLI's own), and words how the program broke.
    """

    program: ClassVar[str]  # its command's name on PATH: "claude"
    variable: ClassVar[str]  # where a user points awf at another copy of it: "AWF_CLAUDE"
    install: ClassVar[str]  # how to install it, as a sentence: "Install Claude Code (npm install -g ...)"
    tested_version: ClassVar[str]  # the version awf is tested with: its pin in .ci/install-agent-clis
    default_model: ClassVar[str | None]  # the model of a runtime that names none; None: the CLI's own
    models: ClassVar[str]  # what "model" is, for the error: 'a model\'s name ("gpt-5.5")'
    # The efforts the CLI takes, or what an effort is (any word) for the error: 'a reasoning effort ("low", ...)'.
    efforts: ClassVar[tuple[str, ...] | str]

    def spec_problem(self, runtime: RuntimeOptions) -> str | None:
        return (
            model_problem(runtime, self.default_model, self.models)
            or effort_problem(runtime, self.efforts)
            or extra_args_problem(runtime)
            or self.options_problem(runtime)
        )

    def options_problem(self, runtime: RuntimeOptions) -> str | None:
        """What is wrong with the runtime's options that are this CLI's own, or None."""
        return None

    def missing(self, session: Session, env: Mapping[str, str]) -> str | None:
        return self.find(env)[1]

    def find(self, env: Mapping[str, str]) -> tuple[str | None, str | None]:
        """(the program to run, None) or (None, what to do about it)."""
        return find_program(self.program, self.variable, env, self.install)

    def model(self, session: Session) -> str | None:
        """The model the runtime asks for, or the harness's default; None: the CLI's own."""
        model = session.runtime.get("model", self.default_model)
        return str(model) if model else None

    def extra_args(self, session: Session) -> list[str]:
        """The CLI's own arguments the runtime adds ("extra_args"), to go after awf's."""
        return list(session.runtime.get("extra_args") or [])

    def broke(self, program: str, ran: Ran) -> str:
        """Why the program ended with nothing to show: its exit and stderr, and the version it
        needs when it did not know an option awf gave it."""
        return failure(self.name, program, ran, self.tested_version, self.unknown_option)

    def unknown_option(self, stderr: str) -> bool:
        """Whether the end of its stderr says it did not know an option (then it is too old)."""
        return False


def program_env(session: Session, env: Mapping[str, str]) -> Mapping[str, str]:
    """What the agent's program is told of where it keeps its files (its home, its config folders):
    `env` for an agent without a sandbox; in one, its fresh home and what `sandbox_home` gave it,
    since nothing else of `env` reaches it there."""
    if session.sandbox is None:
        return env
    return {"HOME": str(session.sandbox.home), **session.sandbox.env}


def model_problem(runtime: Mapping[str, Any], default: str | None, models: str) -> str | None:
    model = runtime.get("model", default)
    if model is not None and (not isinstance(model, str) or not model):
        return f'"model" is {models}, not {model!r}'
    return None


def effort_problem(runtime: Mapping[str, Any], efforts: tuple[str, ...] | str) -> str | None:
    effort = runtime.get("effort")
    if effort is None:
        return None
    if isinstance(efforts, tuple):
        return None if effort in efforts else f'"effort" is one of {", ".join(efforts)}, not {effort!r}'
    return None if isinstance(effort, str) and effort else f'"effort" is {efforts}, not {effort!r}'


def extra_args_problem(runtime: Mapping[str, Any]) -> str | None:
    extra = runtime.get("extra_args")
    if extra is not None and not (isinstance(extra, list) and all(isinstance(arg, str) for arg in extra)):
        return f'"extra_args" is a list of the CLI\'s own arguments, as strings, not {extra!r}'
    return None


def turn_usage(
    model: str | None, tokens: Mapping[str, int], *, models: list[str] | None = None, cost_unknown: str | None = None
) -> dict[str, Any]:
    """A turn's `usage` as `Stopped.usage` gives it: the model, the tokens, the models when it
    used more than one, and why its cost is unknown when it is."""
    usage: dict[str, Any] = {"model": model, **tokens}
    if models is not None and len(models) > 1:
        usage["models"] = models
    if cost_unknown:
        usage["cost_unknown"] = cost_unknown
    return usage
