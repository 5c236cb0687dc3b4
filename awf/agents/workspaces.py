"""The workspaces a run's agents had panes in, read off the `pane` lines of its run.jsonl.

For the attempt after a crash, which names the workspace the interrupted attempt left open, and
for `awf attach`, which finds the one to show.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..record.liveness import is_alive
from ..record.log import Line, read_lines
from .multiplexer import Multiplexer, MultiplexerError, multiplexer


@dataclass
class RecordedWorkspace:
    attempt: int
    multiplexer: str
    server: str
    name: str
    agents: dict[str, tuple[int, str | None]] = field(default_factory=dict)  # key: its last program's pid, start

    def connect(self) -> Multiplexer:
        return multiplexer(self.multiplexer, self.server)

    def is_open(self) -> bool:
        try:
            mux = self.connect()
            return mux.missing() is None and mux.has_workspace(self.name)
        except MultiplexerError:
            return False


# The lines that name an agent's pane.
PANE_KINDS = frozenset({"pane"})


def recorded_workspaces(log: Path, lines: Iterable[Line] | None = None) -> list[RecordedWorkspace]:
    """Every workspace the run's `pane` lines name, by attempt, in the order they were opened.

    `lines`: the log's lines of PANE_KINDS, when they are read already."""
    found: dict[tuple[int, str, str], RecordedWorkspace] = {}
    for line in read_lines(log, kinds=PANE_KINDS) if lines is None else lines:
        item = line.entry
        if item["kind"] != "pane":
            continue
        key = (item["attempt"], item["server"], item["workspace"])
        workspace = found.setdefault(
            key, RecordedWorkspace(item["attempt"], item["multiplexer"], item["server"], item["workspace"])
        )
        workspace.agents[item["agent"]] = (item["pid"], item.get("process_start"))
    return list(found.values())


def name_interrupted(log: Path, attempt: int, run: str, lines: Iterable[Line] | None = None) -> list[str]:
    """What to say of the workspaces of `attempt`, which was interrupted: where, and whether open."""
    said = []
    for workspace in recorded_workspaces(log, lines):
        if workspace.attempt != attempt:
            continue
        if not workspace.is_open():
            said.append(f"attempt {attempt}'s agents had panes in the workspace {workspace.name!r}, closed since")
            continue
        said.append(
            f"attempt {attempt}'s agents' panes are still open in the workspace {workspace.name!r} "
            f"({workspace.multiplexer} -L {workspace.server}): look with `awf attach {run}`; they close when the "
            "next run opens an agent in a pane"
        )
        for agent, (pid, start) in workspace.agents.items():
            if is_alive(pid, start):
                said.append(
                    f"agent {agent} of attempt {attempt} still runs in its pane (pid {pid}): it may still "
                    "be changing files"
                )
    return said
