"""Progress as plain lines on stderr: one a stage as it starts and ends, then a closing block."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TextIO

from ..engine.durations import format_duration
from ..record.clock import age

MARKS = {"succeeded": "✓", "stopped": "■", "failed": "✗"}
ENDING_MARKS = {
    "completed": "✓", "parked": "◆", "stopped": "■", "failed": "✗", "timed-out": "✗", "cancelled": "✗",
}
HOUR = 3600.0


def relative(path: Path) -> str:
    """A path as short as it reads from the current folder."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


class LineReporter:
    """Writes the attempt's progress, one line per change. Never lets a closed terminal fail a run."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr

    def _say(self, text: str) -> None:
        try:
            print(text, file=self.stream, flush=True)
        except (OSError, ValueError):
            pass  # the terminal went away (SIGHUP); the record keeps everything

    def attempt_started(self, workflow: str, run_id: str, attempt: int, record_dir: Path) -> None:
        self._say(f"▶ {workflow}/{run_id} · attempt {attempt}")

    def notice(self, text: str) -> None:
        self._say(f"! {text}")

    def stage_reused(self, name: str, value: Any, record: dict[str, Any] | None, how: str) -> None:
        if how == "provided":
            self._say(f"↺ {name}  given with --values")
            return
        record = record or {}
        seconds = age(record.get("ended"))
        old = f", {format_duration(seconds)} ago" if seconds is not None and seconds >= HOUR else ""
        summary = f" · {record['summary']}" if record.get("summary") else ""
        self._say(f"↺ {name}  from attempt {record.get('attempt', '?')}{old}{summary}")

    def stage_started(self, name: str, why: str | None) -> None:
        self._say(f"▸ {name}")

    def stage_ended(self, record: dict[str, Any], seconds: float) -> None:
        mark = MARKS.get(record["outcome"], "?")
        if record["outcome"] == "succeeded":
            summary = f" · {record['summary']}" if record.get("summary") else ""
            self._say(f"{mark} {record['stage']}  {format_duration(seconds)}{summary}")
        else:
            self._say(f"{mark} {record['stage']}  {record['outcome']}: {record.get('reason') or ''}")

    def logged(self, stage: str | None, message: str) -> None:
        self._say(f"  {message}")

    def agent_turn_started(self, stage: str | None, agent: str, harness: str, turn: int, label: str) -> None:
        again = f" · turn {turn}" if turn > 1 else ""
        self._say(f"  ◦ {agent} ({harness}){again} · {label}")

    def agent_turn_nudged(self, stage: str | None, agent: str, why: str) -> None:
        self._say(f"  ↻ {agent} has not answered ({why}): sent the recovery prompt")

    def agent_turn_ended(self, stage: str | None, agent: str, outcome: str, reason: str | None,
                         seconds: float) -> None:
        if outcome == "answered":
            self._say(f"  ✓ {agent} answered  {format_duration(seconds)}")
        else:
            self._say(f"  ✗ {agent} {outcome}: {_first_line(reason)}")

    def closing(self, ending: Any) -> None:
        """The closing block: the ending, where, why, the command that goes on, the record."""
        out = ending.out
        mark = ENDING_MARKS.get(ending.outcome, "?")
        name = f"{out['workflow']}/{out['id']}"
        if ending.outcome == "completed":
            self._say(f"{mark} {name} completed (attempt {out['attempt']})")
            return
        if ending.detail:
            self._say(ending.detail.rstrip())
        where = f" in {ending.stage}" if ending.stage else _between(out)
        self._say(f"{mark} {name} {ending.outcome}{where} (attempt {out['attempt']}, exit {ending.exit_code})")
        if ending.reason:
            first, *rest = ending.reason.splitlines()
            self._say(f"  why:     {first}")
            for line in rest:
                self._say(f"         {line}")
        for hint in ending.hints:
            self._say(f"  note:    {hint}")
        if ending.go_on:
            self._say(f"  go on:   {ending.go_on}")
        self._say(f"  records: {relative(ending.record_dir)}")


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] + (" …" if len(lines) > 1 else "") if lines else ""


def _between(out: dict[str, Any]) -> str:
    ran = [item["stage"] for item in out.get("stages") or []]
    return f" between stages, after {ran[-1]}" if ran else " before any stage"
