"""What awf needs of a terminal multiplexer, so panes can run on tmux today and others later.

A multiplexer runs a server of awf's own (never the user's default one); on it, a workspace
(a tmux session) holds one window a pane agent, each with one pane. awf names workspaces, starts
programs in windows, pastes into panes, reads their screens, and closes them; a person attaches.
One module a multiplexer, `awf/agents/mux_{name}.py`, with a module-level `MULTIPLEXER` class
that takes the server's name; `mux_tmux` is the one built.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, Protocol


class MultiplexerError(Exception):
    """The multiplexer refused or failed a command; the message says which and why."""


@dataclass(frozen=True)
class Pane:
    """Where a program runs: the window's and the pane's ids, good while the server lives."""

    workspace: str
    window: str  # the window's name: the agent's key
    window_id: str
    pane_id: str
    pid: int  # the program's


@dataclass(frozen=True)
class Screen:
    """A pane as it looks now."""

    text: str  # what is on it
    marks: str  # what else moves when the screen changes: the cursor, the lines scrolled off
    dead: bool  # its program has exited; the pane stays, showing its last screen
    status: int | None  # the exit code of a program that exited
    signal: int | None  # the signal that killed a program, if one did


@dataclass(frozen=True)
class Workspace:
    """A workspace on the server, with the awf process that owns it (its pid and start time)."""

    name: str
    owner_pid: int | None
    owner_start: str | None


class Multiplexer(Protocol):
    name: str  # "tmux"
    server: str  # the server's name (tmux's socket name)

    def missing(self) -> str | None:
        """What to install before panes can run, or None."""

    def workspace_name(self, wanted: str) -> str:
        """The name a workspace asked to be called `wanted` gets, within the multiplexer's rules."""

    def workspaces(self) -> list[Workspace]:
        """The workspaces on the server; none when it does not run."""

    def open_workspace(
        self, name: str, owner_pid: int, owner_start: str | None, window: str, command: Sequence[str], cwd: Path
    ) -> Pane:
        """Make the workspace `name`, owned by that process, with its first window running `command`."""

    def open_window(self, workspace: str, window: str, command: Sequence[str], cwd: Path) -> Pane:
        """A new window in the workspace, running `command`."""

    def restart(self, pane: Pane, command: Sequence[str], cwd: Path) -> Pane:
        """Run `command` again in the pane whose program exited."""

    def screen(self, pane: Pane) -> Screen | None:
        """The pane's screen and its program's state; None once the pane is gone."""

    def paste(self, pane: Pane, text: str) -> None:
        """Paste `text` into the pane, as a person pasting into a terminal would."""

    def press(self, pane: Pane, keys: Sequence[str]) -> None:
        """Press these keys in the pane (tmux's key names: Enter, C-d, Escape)."""

    def close_window(self, pane: Pane) -> None:
        """Close the pane's window, ending its program."""

    def close_workspace(self, name: str) -> bool:
        """Close the workspace and every program in it; False when there was none."""

    def has_workspace(self, name: str) -> bool: ...

    def window_names(self, workspace: str) -> list[str]: ...

    def attach(self, workspace: str, window: str | None) -> NoReturn:
        """Replace this process with one that shows the workspace (at `window`) in this terminal."""


def multiplexer(name: str, server: str, env: Mapping[str, str] | None = None) -> Multiplexer:
    """The multiplexer `name` (its module `awf.agents.mux_{name}`), on the server named `server`."""
    try:
        module = importlib.import_module(f"{__package__}.mux_{name}")
    except ModuleNotFoundError:
        raise MultiplexerError(f"awf has no multiplexer named {name!r}; it has tmux") from None
    made: Multiplexer = module.MULTIPLEXER(server, env)
    return made
