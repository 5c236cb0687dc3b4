"""Progress as plain lines on stderr: one a stage as it starts and ends, then a closing block."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from ..engine.durations import format_duration
from ..record.clock import age
from .one_line import first_line, recorded_by, skipped_text, status_text

MARKS = {"succeeded": "✓", "stopped": "■", "failed": "✗"}
HOUR = 3600.0
# What an attempt with no ending whose process is gone is said to be, wherever it is shown.
GONE_WITHOUT_ENDING = "the attempt's process is gone, with no ending"


class LineReporter:
    """Writes the attempt's progress, one line per change. Never lets a closed terminal fail a run."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream: TextIO = stream or sys.stderr

    def _say(self, text: str) -> None:
        try:
            # One write and a flush: a continue says a line for each of thousands of reused stages.
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass  # the terminal went away (SIGHUP); the record keeps everything

    def attempt_started(self, workflow: str, run_id: str, attempt: int, record_dir: Path) -> None:
        self._say(f"▶ {workflow}/{run_id} · attempt {attempt}")

    def notice(self, text: str) -> None:
        self._say(f"! {text}")

    def stage_reused(self, name: str, value: Any, record: Mapping[str, Any] | None, how: str) -> None:
        if how == "provided":
            self._say(f"↺ {name}  given with --values")
            return
        if how == "skipped":
            self._say(f"↷ {name}  {skipped_text(record)}")
            return
        record = record or {}
        seconds = age(record.get("ended"))
        old = f", {format_duration(seconds)} ago" if seconds is not None and seconds >= HOUR else ""
        summary = f" · {record['summary']}" if record.get("summary") else ""
        self._say(f"↺ {name}  from {recorded_by(record)}{old}{summary}")

    def stage_started(self, name: str, why: str | None) -> None:
        self._say(f"▸ {name}")

    def stage_ended(self, record: Mapping[str, Any], seconds: float) -> None:
        mark = MARKS.get(record["outcome"], "?")
        if record["outcome"] == "succeeded":
            summary = f" · {record['summary']}" if record.get("summary") else ""
            self._say(f"{mark} {record['stage']}  {format_duration(seconds)}{summary}")
        else:
            self._say(f"{mark} {record['stage']}  {record['outcome']}: {first_line(record.get('reason'))}")

    def logged(self, stage: str | None, message: str) -> None:
        self._say(f"  {message}")

    def status(self, text: str, progress: float | None) -> None:
        self._say(f"… {status_text(text, progress)}")

    def group_started(self, label: str, branches: int, concurrency: int | None) -> None:
        at_once = f", {concurrency} at a time" if concurrency is not None and concurrency < branches else ""
        self._say(f"⇉ {label}  {branches} branch{'' if branches == 1 else 'es'}{at_once}")

    def group_ended(self, label: str, tally: str) -> None:
        self._say(f"⇇ {label}  {tally}")

    def branch_started(self, label: str, branch: str) -> None:
        self._say(f"  ▸ {branch}")

    def branch_ended(self, label: str, branch: str, outcome: str, reason: str | None, seconds: float) -> None:
        mark = MARKS.get(outcome, "✗")
        if outcome == "succeeded":
            self._say(f"  {mark} {branch}  {format_duration(seconds)}")
        else:
            self._say(f"  {mark} {branch}  {outcome}" + (f": {first_line(reason)}" if reason else ""))

    def agent_turn_started(self, stage: str | None, agent: str, harness: str, turn: int, label: str) -> None:
        again = f" · turn {turn}" if turn > 1 else ""
        self._say(f"  ◦ {agent} ({harness}){again} · {label}")

    def agent_turn_nudged(self, stage: str | None, agent: str, why: str) -> None:
        self._say(f"  ↻ {agent} has not answered ({why}): sent the recovery prompt")

    def agent_turn_waiting(self, stage: str | None, agent: str, why: str) -> None:
        self._say(f"  … {agent} is {why}")

    def agent_turn_ended(self, stage: str | None, agent: str, outcome: str, reason: str | None, seconds: float) -> None:
        if outcome == "answered":
            self._say(f"  ✓ {agent} answered  {format_duration(seconds)}")
        else:
            self._say(f"  ✗ {agent} {outcome}: {first_line(reason)}")

    def closing(self, ending: Any) -> None:
        """The closing block: the ending, where, why, the totals, the command that goes on, the record."""
        from .closing import closing_lines

        for line in closing_lines(
            ending.out, record_dir=ending.record_dir, detail=ending.detail, hints=ending.hints, costs=ending.costs
        ):
            self._say(line)
