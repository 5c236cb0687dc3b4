"""Agents' processes: each in a process group of its own, written down, and ended by group.

An agent runs in a new session (so a new process group), so Ctrl-C in awf's terminal, or awf
being killed, does not reach it: awf decides when it ends. With no sandbox the group's leader is
the reaper (reaper.py), which holds whatever leaves the group, so ending the group ends those
too. Every process is written to run.jsonl (fsynced) as it starts, with its pid and the kernel's
start time, so that after a crash the next attempt can tell which of them still run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..record import entries
from ..record.files import FILE_MODE
from ..record.liveness import process_start
from ..record.untrusted import open_fd
from .reaper import descendants

END_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
POLL = 0.05


class AgentProcess:
    """One process an agent's harness started; the leader of its own process group."""

    def __init__(self, popen: subprocess.Popen[bytes], command: Sequence[str]) -> None:
        self.popen = popen
        self.command: list[str] = list(command)
        self.pid: int = popen.pid
        self.ended: bool = False  # its group has been ended: never signal that pgid again

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def wait(self) -> int:
        """The exit code, once the process has exited (polled, so any deadline can interrupt it)."""
        while (code := self.popen.poll()) is None:
            await asyncio.sleep(POLL)
        return code

    def end(self, grace: float = END_GRACE) -> None:
        """End the whole group: SIGTERM, then SIGKILL for whatever is left after `grace`."""
        if not self.ended:
            end_group(self.pid, self.popen, grace)
            self.ended = True


def end_group(pgid: int, popen: subprocess.Popen[bytes] | None = None, grace: float = END_GRACE) -> None:
    """SIGTERM to the group led by `pgid`; after `grace`, SIGKILL to it and to every process below its
    leader. An unsandboxed agent's leader is the reaper, which ends what left the group itself; if
    the grace runs out first, those below it are killed before it is, or they would go to init."""
    if not _signal_group(pgid, signal.SIGTERM):
        if popen is not None:
            popen.poll()
        return
    until = time.monotonic() + grace
    while time.monotonic() < until:
        if popen is not None:
            popen.poll()  # reap the leader, or it lingers as a zombie in the group
        if not group_alive(pgid):
            return
        time.sleep(0.01)
    for pid in descendants(pgid):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _signal_group(pgid, signal.SIGKILL)
    if popen is not None:
        try:
            popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass


def _signal_group(pgid: int, number: int) -> bool:
    try:
        os.killpg(pgid, number)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_alive(pgid: int) -> bool:
    """Whether any process of the group runs: zombies, which are only waiting to be reaped, don't."""
    if not _signal_group(pgid, 0):
        return False
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            return True
    return False


@dataclass(frozen=True)
class Owner:
    """Whose a process is, as its agent-process line says: the agent, and the turn and the stage it
    was started in."""

    agent: str
    turn: int | None = None
    stage: str | None = None


class ProcessBook:
    """Every process the attempt's agents started: how it starts them, and how it ends them all."""

    def __init__(self, log: Path, attempt: int) -> None:
        self.log = log
        self.attempt = attempt
        self.processes: list[tuple[str, AgentProcess]] = []

    def spawn(
        self,
        owner: Owner,
        command: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stdin: Path | None,
        stdout: Path,
        stderr: Path,
    ) -> AgentProcess:
        """Start `command` in a session of its own, with files for its standard streams.

        Files, not pipes: an agent left running after awf is gone keeps writing to them instead
        of dying of a broken pipe, and what it wrote stays in the record. They are in the agent's
        own folder, where it may have put a link in their place: opened without following one.
        """
        append = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        with (
            open(open_fd(stdin, os.O_RDONLY) if stdin is not None else os.open(os.devnull, os.O_RDONLY), "rb") as given,
            open(open_fd(stdout, append, FILE_MODE), "ab") as out,
            open(open_fd(stderr, append, FILE_MODE), "ab") as err,
        ):
            popen = subprocess.Popen(
                list(command),
                cwd=cwd,
                env=dict(env),
                stdin=given,
                stdout=out,
                stderr=err,
                start_new_session=True,
                close_fds=True,
            )
        process = AgentProcess(popen, command)
        self.processes.append((owner.agent, process))
        fields: entries.AgentProcessFields = {
            "attempt": self.attempt,
            "agent": owner.agent,
            "pid": process.pid,
            "process_start": process_start(process.pid),
            "command": list(command),
            "turn": owner.turn,
        }
        if owner.stage is not None:
            fields["stage"] = owner.stage
        entries.append(self.log, entries.agent_process(**fields))
        return process

    def end(self, agent: str | None = None, grace: float = END_GRACE) -> None:
        """End the process groups of one agent, or of all of them."""
        for owner, process in self.processes:
            if agent is None or owner == agent:
                process.end(grace)
