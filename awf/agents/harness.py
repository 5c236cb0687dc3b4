"""What a harness is: the one part of awf that knows how to talk to one kind of agent.

The turn (turns.py) owns everything that is the same for every agent: the answer channel,
the deadline, the recovery prompt, the outcome and its record. A harness only delivers a
message to its agent and says how the agent stopped. See the package's docstring for the
contract in full.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ..record.entries import RuntimeOptions
from .processes import AgentProcess
from .reaper import command_under_reaper

if TYPE_CHECKING:
    from .sandbox.wrap import AgentSandbox


@dataclass(frozen=True)
class Message:
    """One delivery of a turn: its prompt, or the recovery prompt after the agent stopped silent."""

    text: str  # what to send, ending with how to answer
    turn: int  # the turn's number, from 1 for each agent
    delivery: int  # 1: the prompt; 2: the recovery prompt
    original: str  # delivery 1's text: a harness with no session resends it with the recovery prompt
    dir: Path  # the turn's folder: the harness keeps its files here (<delivery>.stdout.txt, …)
    env: Mapping[str, str]  # the environment the agent's process must have for `awf answer`
    deadline: float | None  # wall-clock seconds; the turn enforces it, a harness may pass it on

    @property
    def recovery(self) -> bool:
        return self.delivery > 1


@dataclass
class Stopped:
    """How the agent stopped, if the channel did not settle the turn first.

    All None: it stopped and gave nothing, and the turn sends the recovery prompt.
    """

    failed: str | None = None  # it broke (exit code, stderr tail): the turn fails with this reason
    blocked: str | None = None  # it waits on something awf cannot give (a permission, a login)
    text: str | None = None  # an answer given outside the channel, checked as `awf answer` checks
    usage: dict[str, Any] | None = None  # tokens and the like, as the harness reports them
    cost: float | None = None  # in US dollars, where the harness reports it


@dataclass
class Session:
    """One agent as its harness sees it. awf makes it at `wf.agents.open`; it lives for the attempt."""

    key: str
    runtime: RuntimeOptions
    instructions: str | None
    cwd: Path
    dir: Path  # the agent's folder in the run's record
    spawn_process: Callable[..., AgentProcess] = field(repr=False)
    id: str | None = None  # the harness's session id, once it has one: recorded with each turn
    data: dict[str, Any] = field(default_factory=dict)  # the harness's own state, between turns
    run: str = ""  # {workflow}/{id}
    attempt: int = 0
    log: Path | None = None  # the run's run.jsonl
    sandbox: AgentSandbox | None = None  # the agent's sandbox, or None: it runs unconfined

    @property
    def model(self) -> str | None:
        model = self.runtime.get("model")
        return None if model is None else str(model)

    def spawn(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        stdin: Path | None,
        stdout: Path,
        stderr: Path,
        turn: int | None = None,
        cwd: Path | None = None,
    ) -> AgentProcess:
        """Start a process for this agent: in its own process group, recorded with its pid, and
        ended with the attempt; in its sandbox, when it has one. A harness starts every process
        through this."""
        command, env = self.confined(command, env)
        process = self.spawn_process(
            self.key, command, cwd=cwd or self.cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr, turn=turn
        )
        if self.sandbox is not None:
            self.sandbox.watch.started(process.pid)
        return process

    def confined(self, command: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """`command` as it runs in the agent's sandbox, and the clean environment it gets there; for
        an agent without one, `command` under the reaper, which ends whatever it leaves behind."""
        if self.sandbox is None:
            return command_under_reaper(command, env), dict(env)
        return self.sandbox.wrap(command, env)


@dataclass(frozen=True, kw_only=True)
class Capabilities:
    """What a harness can do: every harness states all of it, as its class's `capabilities`.

    `kit.capability_problems` holds each statement to the methods the harness defines
    (docs/harnesses.md says what each promises).
    """

    # A later delivery to the agent continues its session (`session.id`): the recovery prompt and
    # the next turn reach a program that has the conversation so far. Without, they start afresh.
    sessions: bool
    # It reads an answer off the program's own output (`Stopped.text`), besides `awf answer`.
    answer_in_output: bool
    # It reports each turn's tokens (`Stopped.usage`).
    tokens: bool
    # Who says what a turn cost: the program itself ("reported"), awf from the tokens with
    # genai-prices ("priced"), or no one (None).
    cost: Literal["reported", "priced"] | None
    # It names the program's session file as each turn starts and reads the model calls in it, so
    # the next attempt counts a turn cut short (a crash, a cancel, a timeout).
    session_file: bool
    # It runs in a terminal pane ("placement": "pane"): `pane_command`.
    pane: bool
    # In a pane, it tells from the program's own record when a message is done, with its tokens:
    # `pane_watch`. Without, awf goes by the screen and records no tokens.
    pane_finish: bool
    # Under --sandbox, it gives the program a fresh home with only its login, and the address of
    # its model: `sandbox_home` and `endpoints`. Without, the program needs neither.
    sandbox_login: bool


@dataclass(frozen=True)
class PaneProgram:
    """The interactive program a harness runs in a terminal pane (a runtime's "placement": "pane").

    awf starts `command` in the pane with the environment `awf answer` needs (and `env`), pastes
    each message into it and presses `submit`. The agent answers with `awf answer` from its shell.
    """

    command: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)  # more environment, over what awf gives
    submit: tuple[str, ...] = ("Enter",)  # keys pressed after the paste, by tmux's key names
    ready: Callable[[str], bool] | None = None  # the screen shows it takes input; None: at once
    settle: float = 0.3  # seconds between the paste and the submit keys, for a program to take the paste
    unset: tuple[str, ...] = ()  # variables of awf's environment the program must not see


class Harness:
    """The base of every harness. Subclass it in `awf/agents/harnesses/{name}.py` as `HARNESS`."""

    name: ClassVar[str] = ""
    # What it can do: every harness states it (see Capabilities, and docs/harnesses.md).
    capabilities: ClassVar[Capabilities]
    # A line added to the answer instructions, for a way of answering only this harness has.
    answer_hint: ClassVar[str | None] = None
    # Once the agent has answered, how long `deliver` may go on before the turn cancels it.
    answer_grace: ClassVar[float] = 2.0
    # `answer_hint` for the agent in a pane, where what it prints is on a screen, not read.
    pane_answer_hint: ClassVar[str | None] = None
    # Once the agent in a pane has answered, how long awf waits for `pane_watch` to see it finish.
    pane_answer_grace: ClassVar[float] = 0.0

    def spec_problem(self, runtime: RuntimeOptions) -> str | None:
        """What is wrong with `runtime` as the workflow wrote it (checked at open), or None."""
        return None

    def missing(self, session: Session, env: Mapping[str, str]) -> str | None:
        """What to install before this agent can run (checked at each turn), or None."""
        return None

    def sandbox_home(self, session: Session, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """For an agent in a sandbox: put in `home` (a fresh folder of its own, its HOME) only the
        credential its program needs, copied from where `env` says the operator keeps it, and return
        the environment the program needs inside (its home, its key, its model's address). Nothing
        else of `env` reaches it."""
        return {}

    def endpoints(self, session: Session, env: Mapping[str, str]) -> list[str]:
        """The host:port of the agent's model API, which its sandbox lets it reach."""
        return []

    async def deliver(self, session: Session, message: Message) -> Stopped:
        """Send `message` to the agent and return once it has stopped working.

        The turn watches the answer channel, the deadline and cancellation while this runs, and
        cancels it when the turn is over: on cancellation, end what this delivery started.
        """
        raise NotImplementedError

    def pane_command(self, session: Session, env: Mapping[str, str]) -> PaneProgram:
        """The interactive program to start in a pane, for a runtime with "placement": "pane".

        Called each time awf starts the program: the first turn, and again after it exited. A
        harness that can resume its session (session.id) says so in the command. `env` is the
        environment the program will have (as `missing` gets it), to find the program by.
        """
        raise NotImplementedError(f"the {self.name} harness cannot run in a pane")

    def pane_watch(self, session: Session, message: Message) -> Callable[[], Stopped | None] | None:
        """Called just before `message` is pasted into the pane: a function awf calls while it
        watches the pane, which returns a Stopped (with the tokens and cost the program reports)
        once the program's own record says it has finished working on the message, else None.
        None (the default): awf goes by the screen alone, and records no tokens."""
        return None

    def pane_text(self, session: Session, message: Message, fresh: bool) -> str:
        """What to paste into the pane for `message`. `fresh`: the program has just been started,
        so it has not seen the instructions, nor the turn's prompt when this is the recovery prompt."""
        text = message.text
        if fresh and message.recovery:
            text += "\n\nThe turn's prompt was:\n\n" + message.original
        if fresh and session.instructions:
            text = session.instructions.rstrip() + "\n\n" + text
        return text

    def name_session(self, session: Session) -> None:
        """Called as each turn starts, before it records where the agent's session is: a harness
        whose program takes the session's id from awf names it here (sets `session.id`)."""
        return None

    def session_file(self, session: Session, env: Mapping[str, str]) -> Path | None:
        """The file the agent's program keeps its session in (where `session.id` is kept), once it
        is known; None: not yet, or never (the default: a program with no session awf can read)."""
        return None

    def session_usage(self, path: Path, start: int, end: int | None) -> dict[str, Any] | None:
        """What the model calls written between bytes `start` and `end` (None: the end) of the
        session file used, as the fields of a `usage` line (tokens, cost, models, cost_unknown);
        None (the default): this harness cannot read a session. Raises OSError when the file
        cannot be read."""
        return None

    def close(self, session: Session) -> None:
        """End the agent: its processes, its session. Called after a timeout or cancellation,
        by `agent.close()`, and when the attempt ends. Must be safe to call more than once."""
        return None
