"""Agents in terminal panes: a runtime with "placement": "pane" runs its agent's interactive
program where a person can watch it and type to it.

    runtime={"harness": "exec", "command": [...], "placement": "pane", "idle": 30, "keep_pane": True}

Any harness whose `pane_command` says what to start can run this way; the harness still knows
its agent, and this module knows panes. The first pane of an attempt opens its workspace, named
for the attempt (`awf fix-issue 212 #1`), on a multiplexer server of awf's own (tmux, `tmux -L
awf-…`, one a run root). Each agent gets a window with one pane, started with the environment
`awf answer` needs. A delivery pastes the message into the pane and presses Enter; the turn
settles when the answer channel takes an answer, as for any agent. A screen that stays the same
for `idle` seconds, or a program that exits with 0, is an agent that stopped without answering:
the recovery prompt is typed into the same pane (a program that exited is started again in it).
A program that exits otherwise fails the turn with its exit status. The next turn of the agent
is typed into the same pane.

An attempt that ends closes its panes; `keep_pane` keeps the pane of an agent whose last turn
did not end answered, for a person to look at. After a crash the panes stay open, and the next
attempt names them; the next run that opens a pane closes every workspace whose awf is gone.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..record import entries
from ..record.entries import RuntimeOptions
from ..record.errors import RecordError
from ..record.files import ensure_dir, read_bytes, write_atomic
from ..record.liveness import is_alive, process_start
from . import turn_outcome as kinds
from .channel import ENV_TURN, read_agent, read_outcome, turn_dir
from .harness import Harness, Message, PaneProgram, Session, Stopped
from .multiplexer import Multiplexer, MultiplexerError, Pane, Screen, multiplexer
from .processes import end_group

SERVER_ENV = "AWF_TMUX_SOCKET"  # the tmux server's name, instead of one derived from the run root
IDLE = 30.0  # seconds a screen may stay the same before the agent counts as stopped
READY = 60.0  # seconds a program has to show it takes input
POLL = 0.2
STATUS_WAIT = 2.0  # seconds to wait for tmux to learn an exit status the launcher did not write
SCREEN_TAIL = 6  # lines of the last screen in a failed turn's reason
# The pane's own: what the multiplexer sets in it must not be overwritten by awf's environment.
_PANE_OWN = ("TERM", "TMUX", "TMUX_PANE", "COLUMNS", "LINES")
_STATE = "pane"  # the key in session.data


def server_name(run_dir: Any, env: Mapping[str, str]) -> str:
    """The multiplexer server of the run root that holds `run_dir`, or the one SERVER_ENV names."""
    given = env.get(SERVER_ENV, "").strip()
    if given:
        return given
    root = os.path.abspath(os.fspath(run_dir) + "/../..")
    return "awf-" + hashlib.sha256(root.encode()).hexdigest()[:12]


def workspace_title(run: str, attempt: int) -> str:
    """The name an attempt's workspace asks for: `awf fix-issue 212 #1`."""
    workflow, _, run_id = run.partition("/")
    return f"awf {workflow} {run_id} #{attempt}"


@dataclass
class _Panes:
    """One agent's pane, as this attempt knows it."""

    mux: Multiplexer
    keep: bool
    idle: float
    status_file: Path
    pane: Pane | None = None
    command: list[str] = field(default_factory=list)


class PaneHarness(Harness):
    """Runs the agent of another harness in a pane: that harness says what to start, this types to it."""

    def __init__(self, inner: Harness) -> None:
        self.inner = inner
        self.name: str = inner.name  # type: ignore[misc]  # reasons name the harness the workflow asked for
        # What the program prints is on its screen, never taken as its answer: the inner harness's
        # hint for its headless agent may not hold here.
        self.answer_hint: str | None = inner.pane_answer_hint  # type: ignore[misc]
        # The program stays for the next turn: once it answered, wait only where its harness can
        # tell when it finished (and what it used).
        self.answer_grace: float = inner.pane_answer_grace  # type: ignore[misc]

    def spec_problem(self, runtime: RuntimeOptions) -> str | None:
        if type(self.inner).pane_command is Harness.pane_command:
            return f'the {self.name} harness cannot run in a pane: leave out "placement": "pane" to run it headless'
        idle = runtime.get("idle")
        if idle is not None and (isinstance(idle, bool) or not isinstance(idle, (int, float)) or idle <= 0):
            return f'"idle" is the seconds a pane may stay unchanged before awf nudges its agent, not {idle!r}'
        keep = runtime.get("keep_pane")
        if keep is not None and not isinstance(keep, bool):
            return f'"keep_pane" is true or false, not {keep!r}'
        return self.inner.spec_problem(runtime)

    def name_session(self, session: Session) -> None:
        self.inner.name_session(session)

    def session_file(self, session: Session, env: Mapping[str, str]) -> Path | None:
        return self.inner.session_file(session, env)

    def session_usage(self, path: Path, start: int, end: int | None) -> dict[str, Any] | None:
        return self.inner.session_usage(path, start, end)

    def missing(self, session: Session, env: Mapping[str, str]) -> str | None:
        problem = self._panes(session, env).mux.missing()
        if problem:
            return (
                f'{problem}: this agent\'s runtime says "placement": "pane", and panes run in tmux; install it, '
                'or leave out "placement": "pane" to run the agent headless'
            )
        return self.inner.missing(session, env)

    def sandbox_home(self, session: Session, env: Mapping[str, str], home: Path) -> dict[str, str]:
        return self.inner.sandbox_home(session, env, home)

    def endpoints(self, session: Session, env: Mapping[str, str]) -> list[str]:
        return self.inner.endpoints(session, env)

    async def deliver(self, session: Session, message: Message) -> Stopped:
        panes = self._panes(session, message.env)
        try:
            return await self._deliver(session, message, panes)
        except MultiplexerError as error:
            return Stopped(failed=f"the pane could not be used: {error}")

    async def _deliver(self, session: Session, message: Message, panes: _Panes) -> Stopped:
        mux = panes.mux
        program = self.inner.pane_command(session, message.env)
        screen = mux.screen(panes.pane) if panes.pane is not None else None
        fresh = screen is None or screen.dead
        if fresh:
            self._start(session, message, panes, program)
            if program.ready is not None:
                failed = await self._ready(panes, program)
                if failed is not None:
                    return failed
        pane = panes.pane
        assert pane is not None
        text = self.inner.pane_text(session, message, fresh).rstrip("\n")
        write_atomic(message.dir / f"{message.delivery}.prompt.txt", text)  # the record of what was pasted
        finished = self.inner.pane_watch(session, message)
        mux.paste(pane, text)
        if program.settle > 0:
            await asyncio.sleep(program.settle)
        mux.press(pane, program.submit)
        return await self._watch(panes, pane, finished)

    async def _watch(self, panes: _Panes, pane: Pane, finished: Callable[[], Stopped | None] | None) -> Stopped:
        """Until the program exits, its harness sees it finished, or its screen stays the same for
        `idle` seconds."""
        look: tuple[str, str] | None = None
        quiet_since = time.monotonic()
        while True:
            screen = await _screen(panes, pane)
            if screen is None:
                panes.pane = None
                return Stopped(failed=f"its pane was closed while it worked ({pane.workspace}, window {pane.window})")
            if screen.dead:
                return self._exited(panes, screen)
            stopped = finished() if finished is not None else None
            if stopped is not None:
                return stopped
            if (screen.text, screen.marks) != look:
                look, quiet_since = (screen.text, screen.marks), time.monotonic()
            elif time.monotonic() - quiet_since >= panes.idle:
                return Stopped()  # quiet, with no answer: the turn sends the recovery prompt into this pane
            await asyncio.sleep(POLL)

    async def _ready(self, panes: _Panes, program: PaneProgram) -> Stopped | None:
        assert panes.pane is not None and program.ready is not None
        until = time.monotonic() + READY
        while True:
            screen = await _screen(panes, panes.pane)
            if screen is None:
                return Stopped(failed="its pane was closed before its program took input")
            if screen.dead:
                return self._exited(panes, screen)
            if program.ready(screen.text):
                return None
            if time.monotonic() > until:
                return Stopped(
                    failed=f"{shlex.join(panes.command)} did not show it takes input within {READY:.0f} s"
                    f"{_screen_tail(screen)}"
                )
            await asyncio.sleep(POLL)

    def _exited(self, panes: _Panes, screen: Screen) -> Stopped:
        if screen.status == 0 and screen.signal is None:
            return Stopped()  # it ended its work without answering: started again for the recovery prompt
        if screen.signal:
            how = f"was killed by signal {screen.signal}"
        elif screen.status is None:
            how = "exited, with an exit status no one learned"
        elif screen.status > 128:
            how = f"exited with code {screen.status} (as a program killed by signal {screen.status - 128} does)"
        else:
            how = f"exited with code {screen.status}"
        return Stopped(failed=f"{shlex.join(panes.command)} {how} in its pane{_screen_tail(screen)}")

    def _start(self, session: Session, message: Message, panes: _Panes, program: PaneProgram) -> None:
        """Start the program: again in its pane, in a new window of the attempt's workspace, or in a
        new workspace (after closing those whose awf is gone)."""
        mux = panes.mux
        panes.command = list(program.command)
        launcher = ["/bin/sh", str(_launcher(session, program, message.env))]
        if panes.pane is not None and mux.screen(panes.pane) is not None:
            pane = mux.restart(panes.pane, launcher, session.cwd)
        else:
            pane = self._open(session, mux, launcher)
        panes.pane = pane
        if session.sandbox is not None:
            session.sandbox.watch.started(pane.pid)
        if session.log is not None:
            entries.append(
                session.log,
                entries.pane(
                    attempt=session.attempt,
                    agent=session.key,
                    turn=message.turn,
                    multiplexer=mux.name,
                    server=mux.server,
                    workspace=pane.workspace,
                    window=pane.window,
                    pane=pane.pane_id,
                    pid=pane.pid,
                    process_start=process_start(pane.pid),
                    command=panes.command,
                ),
            )

    def _open(self, session: Session, mux: Multiplexer, launcher: list[str]) -> Pane:
        name = mux.workspace_name(workspace_title(session.run, session.attempt))
        me = os.getpid()
        for workspace in mux.workspaces():
            if workspace.owner_pid is None or workspace.owner_pid == me:
                continue
            if not is_alive(workspace.owner_pid, workspace.owner_start):
                mux.close_workspace(workspace.name)  # its attempt crashed or ended; its awf is gone
            elif workspace.name == name:
                raise MultiplexerError(f"the workspace {name!r} belongs to another awf (pid {workspace.owner_pid})")
        if mux.has_workspace(name):
            return mux.open_window(name, session.key, launcher, session.cwd)
        return mux.open_workspace(name, me, process_start(me), session.key, launcher, session.cwd)

    def close(self, session: Session) -> None:
        panes = session.data.get(_STATE)
        if not isinstance(panes, _Panes) or panes.pane is None:
            return
        pane, panes.pane = panes.pane, None
        if panes.keep and not _last_turn_answered(session):
            # Left for a person to read; a later turn of this agent gets a new window.
            if session.log is not None:
                entries.append(
                    session.log,
                    entries.log(
                        attempt=session.attempt,
                        message=(
                            f"agent {session.key}'s pane stays open (keep_pane), in {pane.workspace!r}: "
                            f"awf attach {session.run} {session.key}"
                        ),
                    ),
                )
            return
        start = process_start(pane.pid)
        panes.mux.close_window(pane)
        if start is not None and is_alive(pane.pid, start):
            end_group(pane.pid)  # a program that outlived its terminal, and what it started

    def _panes(self, session: Session, env: Mapping[str, str]) -> _Panes:
        panes = session.data.get(_STATE)
        if not isinstance(panes, _Panes):
            runtime = session.runtime
            mux = multiplexer("tmux", server_name(session.dir.parent.parent.parent, env), env)
            panes = _Panes(
                mux,
                keep=bool(runtime.get("keep_pane")),
                idle=float(runtime.get("idle") or IDLE),
                status_file=status_file(session),
            )
            session.data[_STATE] = panes
        return panes


async def _screen(panes: _Panes, pane: Pane) -> Screen | None:
    """The pane's screen; for a program that exited, with its exit status.

    The launcher writes the status down: tmux (3.3) sometimes never learns the status of a
    pane's program. Without the file (the launcher was killed), tmux's, when it comes.
    """
    until = time.monotonic() + STATUS_WAIT
    while True:
        screen = panes.mux.screen(pane)
        if screen is None or not screen.dead:
            return screen
        try:
            written = read_bytes(panes.status_file).decode("utf-8", errors="replace").strip()
        except OSError:
            written = ""
        if written.isdigit():
            return replace(screen, status=int(written), signal=None)
        if screen.status is not None or screen.signal is not None or time.monotonic() > until:
            return screen
        await asyncio.sleep(0.02)


def launcher_dir(session: Session) -> Path:
    """Where awf keeps the files of an attempt's panes: beside its agents' folders, not in one,
    since the launcher runs outside any sandbox and an agent writes its own folder."""
    folder = session.dir.parent / ".panes"
    ensure_dir(folder)
    return folder


def status_file(session: Session) -> Path:
    """Where the launcher writes its program's exit status."""
    return launcher_dir(session) / f"{session.key}.status"


def _launcher(session: Session, program: PaneProgram, env: Mapping[str, str]) -> Path:
    """A script that runs the program with the environment awf gives it, and none of the server's.

    A file, not arguments: the token `awf answer` needs stays out of the process list.
    """
    command, given = session.confined(program.command, {**env, **program.env})
    # The pane lives longer than a turn: `awf answer` finds the turn from the agent's folder.
    given.pop(ENV_TURN, None)
    for key in program.unset:
        given.pop(key, None)
    status = shlex.quote(str(status_file(session)))
    lines = [
        "#!/bin/sh",
        f"# awf starts agent {session.key}'s program in its pane: this environment, and no other.",
        'if [ -z "$AWF_PANE_CLEAN" ]; then',
        '  exec env -i AWF_PANE_CLEAN=1 TERM="$TERM" TMUX="$TMUX" TMUX_PANE="$TMUX_PANE" /bin/sh "$0"',
        "fi",
        "unset AWF_PANE_CLEAN",
        *(
            f"export {key}={shlex.quote(value)}"
            for key, value in sorted(given.items())
            if key not in _PANE_OWN and key.isidentifier()
        ),
        f"cd {shlex.quote(str(session.cwd))} || exit 127",
        f"rm -f {status}",
        "# The program gets these signals; this shell stays to write down how it ended.",
        "trap : HUP INT QUIT TERM",
        shlex.join(command),
        "code=$?",
        f'echo "$code" > {status}',
        'exit "$code"',
    ]
    path = launcher_dir(session) / f"{session.key}.sh"
    write_atomic(path, "\n".join(lines) + "\n")  # readable by its owner only: it holds the token
    return path


def _last_turn_answered(session: Session) -> bool:
    """Whether the agent's last turn settled answered; True when it had none."""
    try:
        number = read_agent(session.dir)["turn"]
    except (OSError, RecordError, KeyError):
        return True
    if not number:
        return True
    settled = read_outcome(turn_dir(session.dir, number))
    return settled is not None and settled.get("outcome") == kinds.ANSWERED


def _screen_tail(screen: Screen) -> str:
    # tmux's own last line on a dead pane ("Pane is dead (status 3, ...)") says nothing the reason doesn't.
    lines = [line.rstrip() for line in screen.text.splitlines() if not line.startswith("Pane is dead")]
    lines = [line for line in lines if line][-SCREEN_TAIL:]
    if not lines:
        return " and left its screen empty"
    return "; the end of its screen:\n" + "\n".join(lines)
