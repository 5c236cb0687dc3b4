"""Agents: `wf.agents.open(...)`, `agent.run(...)`, the answer channel, and the harnesses.

For workflow authors::

    agent = await wf.agents.open(key="reviewer", runtime={"harness": "exec", "command": [...]})
    turn = await agent.run(prompt="Review ...", schema=VERDICT, timeout=600)
    if not turn.outcome.answered:
        wf.stop(f"no review: {turn.outcome.reason}")
    verdict = turn.outcome.value

The modules, one job each: spec (what an agent is opened with), agent (`wf.agents` and an
Agent, which counts its turns), host (what the agents need of the attempt: the Host the engine
makes, the progress and turn-schema protocols), turns (a turn from prompt to outcome, the same for
every harness), turn_outcome (what a turn comes to, as the workflow gets it), channel (the files
`awf answer` writes through), answers (reading and checking an answer), prompts (how-to-answer
and the recovery prompt), processes (process groups, recorded and ended), reaper (the
subreaper each unsandboxed process runs under, which ends what it leaves behind), output (an agent's
output on disk, kept to its runtime's "max_output"), leftovers (agents a
crash left running), registry (finding a harness), harness (the interface), and one
module per harness in harnesses/ (exec, claude, codex, ...) on what they share in kit. panes (an agent's
program in a terminal pane), multiplexer and mux_tmux (the terminal multiplexer behind it),
workspaces (the panes a run's record names), turn_sessions (where a turn's agent keeps its
session, recorded as the turn starts), usage with each harness's reader (harnesses/claude_usage,
..., what a stretch of a CLI's session file used, priced), sandbox/ (bubblewrap around an agent's
processes), and recovery (what earlier attempts' turns cut short used,
counted as the next attempt starts).

A harness is the only code that knows one kind of agent: `awf/agents/harnesses/{name}.py` with a
module-level `HARNESS`, found by its name. Its contract, the capabilities it states and the kit
it builds on (kit, headless, panes, usage) are in docs/harnesses.md; each method is documented
in harness.py.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .harness import Harness, Message, Session, Stopped
    from .spec import AgentError
    from .turn_outcome import Answered, NotAnswered, Outcome, Turn

# Loaded on first use, so `awf answer` does not pay for what only a running attempt needs.
_EXPORTS = {
    "AgentError": "spec",
    "Harness": "harness",
    "Message": "harness",
    "Session": "harness",
    "Stopped": "harness",
    "Answered": "turn_outcome",
    "NotAnswered": "turn_outcome",
    "Outcome": "turn_outcome",
    "Turn": "turn_outcome",
}
__all__ = [
    "AgentError",
    "Answered",
    "Harness",
    "Message",
    "NotAnswered",
    "Outcome",
    "Session",
    "Stopped",
    "Turn",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
