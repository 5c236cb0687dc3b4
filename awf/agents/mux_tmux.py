"""Panes on tmux: a tmux server of awf's own (`tmux -L NAME`), never the user's default one.

A workspace is a tmux session; each pane agent has a window of its own, holding one pane. The
server keeps a pane whose program exited (remain-on-exit), so awf can read its exit status and a
person can read its last screen. Each workspace carries its owner, the awf process that made it
(`@awf_owner`: pid and start time), so a later run can tell the workspaces of crashed attempts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from ..record.liveness import is_alive, process_start
from .multiplexer import MultiplexerError, Pane, Screen, Workspace
from .processes import end_group

TIMEOUT = 15  # seconds for one tmux command: the server answers in milliseconds unless it is stuck
SIZE = ("200", "50")  # a detached workspace's size, until a person attaches and it takes theirs
_PANE = "#{window_id}\t#{pane_id}\t#{pane_pid}"
_STATE = "#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{cursor_x},#{cursor_y}\t#{history_size}"
_GONE = ("can't find", "no server running", "error connecting", "no such", "not found")
_UNSAFE = re.compile(r"[.:]")  # tmux reads them in a target as window and pane separators


class Tmux:
    name = "tmux"

    def __init__(self, server: str, env: Mapping[str, str] | None = None) -> None:
        self.server = server
        # TMUX in the environment would point a client at the server awf runs in, if any.
        self.env: dict[str, str] = {
            key: value for key, value in (env or os.environ).items() if key not in ("TMUX", "TMUX_PANE")
        }

    @property
    def program(self) -> str | None:
        return shutil.which("tmux", path=self.env.get("PATH"))

    def missing(self) -> str | None:
        if self.program is None:
            return "tmux is not installed (apt install tmux, brew install tmux)"
        return None

    def workspace_name(self, wanted: str) -> str:
        return _UNSAFE.sub("_", wanted)

    def workspaces(self) -> list[Workspace]:
        done = self._run("list-sessions", "-F", "#{session_name}\t#{@awf_owner}", check=False)
        if done.returncode != 0:
            return []
        found = []
        for line in done.stdout.splitlines():
            name, _, owner = line.partition("\t")
            pid, _, start = owner.partition(" ")
            found.append(Workspace(name, int(pid) if pid.isdigit() else None, start or None))
        return found

    def has_workspace(self, name: str) -> bool:
        return self._run("has-session", "-t", f"={name}", check=False).returncode == 0

    def open_workspace(
        self, name: str, owner_pid: int, owner_start: str | None, window: str, command: Sequence[str], cwd: Path
    ) -> Pane:
        # One client call: the server starts, takes awf's options, and makes the workspace, which
        # is marked with its owner before any other awf can list it.
        done = self._run(
            "start-server",
            ";",
            "set-option",
            "-g",
            "remain-on-exit",
            "on",
            ";",
            "set-option",
            "-g",
            "history-limit",
            "50000",
            ";",
            "new-session",
            "-d",
            "-s",
            name,
            "-n",
            window,
            "-c",
            str(cwd),
            "-x",
            SIZE[0],
            "-y",
            SIZE[1],
            "-P",
            "-F",
            _PANE,
            "--",
            *command,
            ";",
            "set-option",
            "@awf_owner",
            f"{owner_pid} {owner_start or ''}".strip(),
        )
        return self._pane(name, window, done.stdout)

    def open_window(self, workspace: str, window: str, command: Sequence[str], cwd: Path) -> Pane:
        done = self._run(
            "new-window", "-d", "-t", f"={workspace}:", "-n", window, "-c", str(cwd), "-P", "-F", _PANE, "--", *command
        )
        return self._pane(workspace, window, done.stdout)

    def restart(self, pane: Pane, command: Sequence[str], cwd: Path) -> Pane:
        self._run("respawn-pane", "-k", "-t", pane.pane_id, "-c", str(cwd), "--", *command)
        done = self._run("display-message", "-p", "-t", pane.pane_id, _PANE)
        return self._pane(pane.workspace, pane.window, done.stdout)

    def screen(self, pane: Pane) -> Screen | None:
        done = self._run(
            "display-message",
            "-p",
            "-t",
            pane.pane_id,
            _STATE,
            ";",
            "capture-pane",
            "-p",
            "-t",
            pane.pane_id,
            check=False,
        )
        if done.returncode != 0:
            if _gone(done.stderr):
                return None
            raise MultiplexerError(f"tmux could not read pane {pane.pane_id}: {done.stderr.strip()}")
        state, _, text = done.stdout.partition("\n")
        dead, status, signal, cursor, history = [*state.split("\t"), "", "", "", "", ""][:5]
        return Screen(
            text=text,
            marks=f"{cursor} {history}",
            dead=dead == "1",
            status=int(status) if status.lstrip("-").isdigit() else None,
            signal=int(signal) if signal.isdigit() else None,
        )

    def paste(self, pane: Pane, text: str) -> None:
        buffer = f"awf-{pane.pane_id.lstrip('%')}"
        # From awf's stdin, never from a file: tmux would read a file through any link an agent put
        # in its place. -p: as a bracketed paste where the program asked for one, so a line break
        # is not Enter.
        self._run(
            "load-buffer",
            "-b",
            buffer,
            "-",
            ";",
            "paste-buffer",
            "-d",
            "-p",
            "-b",
            buffer,
            "-t",
            pane.pane_id,
            given=text,
        )

    def press(self, pane: Pane, keys: Sequence[str]) -> None:
        if keys:
            self._run("send-keys", "-t", pane.pane_id, *keys)

    def close_window(self, pane: Pane) -> None:
        done = self._run("kill-window", "-t", pane.window_id, check=False)
        if done.returncode != 0 and not _gone(done.stderr):
            raise MultiplexerError(f"tmux could not close window {pane.window}: {done.stderr.strip()}")

    def close_workspace(self, name: str) -> bool:
        # Closing a pane's terminal signals only its first process, the launcher, which waits on
        # for its program: a program that does not read its terminal would live on, and all it
        # started, so each pane's process group is ended after.
        listed = self._run("list-panes", "-s", "-t", f"={name}", "-F", "#{pane_pid}", check=False)
        pids = [int(word) for word in listed.stdout.split() if word.isdigit()] if listed.returncode == 0 else []
        started = [(pid, process_start(pid)) for pid in pids]
        done = self._run("kill-session", "-t", f"={name}", check=False)
        if done.returncode != 0 and not _gone(done.stderr):
            raise MultiplexerError(f"tmux could not close the workspace {name!r}: {done.stderr.strip()}")
        for pid, start in started:
            if start is not None and is_alive(pid, start):
                end_group(pid)
        return done.returncode == 0

    def window_names(self, workspace: str) -> list[str]:
        done = self._run("list-windows", "-t", f"={workspace}", "-F", "#{window_name}", check=False)
        return done.stdout.splitlines() if done.returncode == 0 else []

    def attach(self, workspace: str, window: str | None) -> NoReturn:
        program = self.program
        if program is None:
            raise MultiplexerError(self.missing() or "tmux is not installed")
        words = [program, "-L", self.server]
        if window is not None:
            words += ["select-window", "-t", self._window_id(workspace, window), ";"]
        words += ["attach-session", "-t", f"={workspace}"]
        os.execve(program, words, self.env)

    def _window_id(self, workspace: str, window: str) -> str:
        done = self._run("list-windows", "-t", f"={workspace}", "-F", "#{window_id}\t#{window_name}")
        for line in done.stdout.splitlines():
            wid, _, name = line.partition("\t")
            if name == window:
                return wid
        raise MultiplexerError(f"the workspace {workspace!r} has no window {window!r}")

    def _pane(self, workspace: str, window: str, printed: str) -> Pane:
        window_id, pane_id, pid = [*printed.strip().split("\t"), "", "", ""][:3]
        if not pane_id.startswith("%") or not pid.isdigit():
            raise MultiplexerError(f"tmux did not say which pane it made (it printed {printed.strip()!r})")
        return Pane(workspace, window, window_id, pane_id, int(pid))

    def _run(self, *args: str, check: bool = True, given: str | None = None) -> subprocess.CompletedProcess[str]:
        program = self.program
        if program is None:
            raise MultiplexerError(self.missing() or "tmux is not installed")
        try:
            done = subprocess.run(
                [program, "-L", self.server, *args],
                capture_output=True,
                text=True,
                env=self.env,
                input=given,
                stdin=subprocess.DEVNULL if given is None else None,
                timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            raise MultiplexerError(f"tmux did not answer within {TIMEOUT} s (server {self.server})") from None
        if check and done.returncode != 0:
            raise MultiplexerError(f"tmux {args[0]} failed: {done.stderr.strip() or f'exit code {done.returncode}'}")
        return done


def _gone(stderr: str) -> bool:
    return any(words in stderr for words in _GONE)


MULTIPLEXER = Tmux
