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
and the recovery prompt), processes (process groups, recorded and ended), output (an agent's
output on disk, kept to its runtime's "max_output"), leftovers (agents a
crash left running), registry (finding a harness), harness (the interface below), and one
module per harness: harness_exec, and later harness_claude, harness_codex. panes (an agent's
program in a terminal pane), multiplexer and mux_tmux (the terminal multiplexer behind it),
workspaces (the panes a run's record names), turn_sessions (where a turn's agent keeps its
session, recorded as the turn starts), usage with usage_claude and usage_codex (what a stretch
of a CLI's session file used, priced), and recovery (what earlier attempts' turns cut short used,
counted as the next attempt starts).

Writing a harness
=================

A harness is the only code that knows one kind of agent. Put it in
`awf/agents/harness_{name}.py` with a module-level `HARNESS` (a subclass of
`awf.agents.harness.Harness`, or an instance of one); `runtime={"harness": "{name}", ...}` or
the alias `runtime="{name}"` then finds it, with no registration. Its methods:

- `name` (class attribute): the name in `runtime`.
- `answer_hint` (class attribute, optional): one more line for the how-to-answer text awf adds
  to every prompt, for a way of answering only this harness has.
- `answer_grace` (class attribute, optional, seconds, default 2): once the agent has answered,
  how long `deliver` may go on before the turn cancels it.
- `spec_problem(runtime) -> str | None`: what is wrong with the runtime dict as written
  (a missing setting, a wrong type). Checked at `wf.agents.open`; a problem raises AgentError.
- `missing(session, env) -> str | None`: what must be installed (or logged in to) before the
  agent can run, saying how to install it. Checked at each turn; a problem fails the turn
  with that reason, never a traceback.
- `async deliver(session, message) -> Stopped`: send `message.text` to the agent and return
  when the agent has stopped working on it. Start every process with `session.spawn(...)`,
  which puts it in a process group of its own, writes its pid to run.jsonl and ends it with
  the attempt; give it `message.env` (it holds what `awf answer` needs: keep it in the agent's
  environment, or export it in the pane the agent runs in). Keep files in `message.dir`,
  named by `message.delivery`. `message.recovery` is true for the recovery prompt: send it in
  the same session where the harness can (a harness with no session sends
  `message.original` too). Return `Stopped()` when the agent stopped and gave nothing; with
  `failed=REASON` when it broke (exit code, the end of stderr); `blocked=REASON` when it waits on
  something awf cannot give; `text=...` when it answered outside the channel (awf checks it as
  `awf answer` would); `usage` and `cost` when the harness reports them. Set `session.id` to the
  harness's session id once known, and keep what the next turn needs in `session.data`: a
  second `run` on one agent continues its session where the harness can. The turn cancels
  `deliver` when the channel settles (after `answer_grace`), at the deadline, or when the
  attempt is cancelled: on `CancelledError`, end what this delivery started, then re-raise.
  An exception from `deliver` fails the turn with its message.
- `name_session(session)`, `session_file(session, env) -> Path | None` and
  `session_usage(path, start, end) -> dict | None` (optional): a harness whose program keeps a
  session file says where it is (naming the session as each turn starts, when its program takes
  the id from awf), and sums the model calls written between two byte offsets of it into the
  fields of a `usage` line (`tokens`, `cost`, `models`, `cost_unknown`). Each turn records where
  the file is as it starts; the next attempt reads a turn cut short from there (recovery.py).
- `close(session)`: end the agent (its session, panes, anything `session.spawn` did not start).
  Called after a timeout or cancellation, by `agent.close()`, and when the attempt ends; it
  must be safe to call more than once. Processes from `session.spawn` are ended by awf anyway.

Everything else (the answer channel, schema checks, the recovery prompt, deadlines, the
outcome, the record of the turn, the progress lines) is the turn's, and the same for every
harness. `harness_exec` is the smallest complete example.

Running in a pane
=================

A runtime with `"placement": "pane"` runs its agent's interactive program in a terminal pane
(tmux) that a person can watch and type into (`awf attach`). Placement is not the harness's
business: `panes.PaneHarness` wraps the harness and does the delivery (start the program in
a window of the attempt's workspace, paste each message, press its keys, watch the screen and
the program's exit). A harness that can run in a pane adds one method, and may override others:

- `pane_command(session, env) -> PaneProgram`: the interactive program to start, as
  `PaneProgram(command=[...], env={...}, submit=("Enter",), ready=None, settle=0.3)`. `env` is
  added to what `awf answer` needs (awf writes both into the launcher; no token on a command
  line). `submit`: the keys (tmux names) pressed after each paste. `ready(screen_text) -> bool`:
  whether the program's screen shows it takes input; awf waits for it (up to a minute) before the
  first paste into a program it just started; None pastes at once. `settle`: seconds between the
  paste and the keys. Called on every start of the program: the first turn, and again after it
  exited; a harness that can resume its session (`session.id`) puts that in the command. The
  default raises NotImplementedError: the harness cannot run in a pane, and opening such an
  agent with `"placement": "pane"` is an AgentError that says so. `env` is the environment the
  program will have, to find it by (as `missing` does).
- `pane_answer_hint` (class attribute, optional): the `answer_hint` for the agent in a pane,
  where what it prints is on a screen and never read as an answer (`answer_hint` is not used).
- `pane_text(session, message, fresh) -> str`: what to paste for a message. The default adds
  `session.instructions` before the text for a program just started (`fresh`), and, for the
  recovery prompt to a program just started, the turn's prompt after it.
- `pane_watch(session, message) -> Callable[[], Stopped | None] | None`: called just before a
  message is pasted. A harness that can read the program's own record of its work (a session
  file) returns a function that awf calls while it watches the pane: a Stopped, with the tokens
  and cost, once the program has finished working on the message (awf then sends the recovery
  prompt at once, instead of waiting `idle` seconds), else None. `pane_answer_grace` (class
  attribute, seconds, default 0): once the agent has answered, how long awf lets it finish, for
  those tokens. The default returns None: awf goes by the screen, and records no tokens.

`deliver` and `close` are not used for a pane agent; `spec_problem` and `missing` still are
(after awf's own checks of the pane settings and of tmux). `exec`, `claude` and `codex` implement
`pane_command`; `codex` also `pane_watch`.
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
