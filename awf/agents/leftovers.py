"""Agents a crashed attempt left running: found from the pids run.jsonl holds."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..record.liveness import is_alive
from ..record.log import read_lines


@dataclass(frozen=True)
class LeftRunning:
    attempt: int
    agent: str
    pid: int
    stage: str | None

    def __str__(self) -> str:
        where = f" in stage {self.stage}" if self.stage else ""
        return (
            f"agent {self.agent} of attempt {self.attempt}{where} is still running (pid {self.pid}): it may still be "
            f"changing files; end it with `kill -- -{self.pid}` unless it should finish"
        )


def left_running(log: Path, attempts: Iterable[int]) -> list[LeftRunning]:
    """The agents' processes of `attempts` that still run: the same pid, started at the same time."""
    wanted = set(attempts)
    found: list[LeftRunning] = []
    seen: set[int] = set()
    for line in read_lines(log):
        item = line.entry
        if item["kind"] != "agent-process" or item.get("attempt") not in wanted or item["pid"] in seen:
            continue
        if is_alive(item["pid"], item.get("process_start")):
            seen.add(item["pid"])
            found.append(LeftRunning(item["attempt"], item["agent"], item["pid"], item.get("stage")))
    return found
