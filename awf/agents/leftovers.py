"""Agents a crashed attempt left running: found from the pids run.jsonl holds."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..record import entries
from ..record.errors import RecordError
from ..record.liveness import is_alive
from ..record.log import Line, read_lines


@dataclass(frozen=True)
class LeftRunning:
    attempt: int
    agent: str
    pid: int
    stage: str | None
    process_start: str | None = None

    def __str__(self) -> str:
        where = f" in stage {self.stage}" if self.stage else ""
        return (
            f"agent {self.agent} of attempt {self.attempt}{where} is still running (pid {self.pid}): it may still be "
            f"changing files; end it with `{self.end_command}` unless it should finish"
        )

    def as_json(self) -> dict[str, Any]:
        """As `awf runs --json` lists it (schemas/runs.schema.json, `left_running`)."""
        return {
            "attempt": self.attempt,
            "agent": self.agent,
            "pid": self.pid,
            "stage": self.stage,
            "end_command": self.end_command,
        }

    @property
    def end_command(self) -> str:
        """The command that ends it: its whole process group, as awf does."""
        return f"kill -- -{self.pid}"

    def end(self, grace: float = 2.0, wait: float = 10.0) -> bool:
        """End its whole process group (SIGTERM, then SIGKILL) and wait until it is gone."""
        import time

        from .processes import end_group, group_alive

        if not is_alive(self.pid, self.process_start):
            return True  # gone already; its pid may be another process's by now
        end_group(self.pid, None, grace)
        until = time.monotonic() + wait
        while group_alive(self.pid):
            if time.monotonic() > until:
                return False
            time.sleep(0.02)
        return True


# The lines that name an agent's processes.
PROCESS_KINDS = frozenset({"agent-process"})


def left_running(log: Path, attempts: Iterable[int], lines: Iterable[Line] | None = None) -> list[LeftRunning]:
    """The agents' processes of `attempts` that still run: the same pid, started at the same time.

    `lines`: the log's lines of PROCESS_KINDS, when they are read already."""
    wanted = set(attempts)
    found: list[LeftRunning] = []
    seen: set[int] = set()
    for line in read_lines(log, kinds=PROCESS_KINDS) if lines is None else lines:
        item = line.entry
        if item["kind"] != "agent-process" or item.get("attempt") not in wanted or item["pid"] in seen:
            continue
        if is_alive(item["pid"], item.get("process_start")):
            seen.add(item["pid"])
            found.append(
                LeftRunning(item["attempt"], item["agent"], item["pid"], item.get("stage"), item.get("process_start"))
            )
    return found


def left_by_crashes(log: Path) -> list[LeftRunning]:
    """The agents still running of every attempt that has no ending and whose process is gone.

    A log that cannot be read shows none: the reader that shows the run says what is wrong with it."""
    try:
        return _left_by_crashes(log)
    except (RecordError, FileNotFoundError):
        return []


def _left_by_crashes(log: Path) -> list[LeftRunning]:
    starts: dict[int, entries.AttemptStartLine] = {}
    ended: set[int] = set()
    for line in read_lines(log, kinds=frozenset({"attempt-start", "attempt-end"})):
        item = line.entry
        if item["kind"] == "attempt-start":
            starts[item["attempt"]] = item
        elif item["kind"] == "attempt-end":
            ended.add(item["attempt"])
    crashed = [
        number
        for number, start in starts.items()
        if number not in ended and not is_alive(start["pid"], start.get("process_start"))
    ]
    return left_running(log, crashed) if crashed else []


def left_lines(left: list[LeftRunning]) -> list[str]:
    """Each one, as the places that show a run list it."""
    return [
        f"agent {one.agent} of attempt {one.attempt}{f' in stage {one.stage}' if one.stage else ''} "
        f"is still running (pid {one.pid}): end it with {one.end_command}"
        for one in left
    ]
