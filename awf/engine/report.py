"""The workflow's report: `report(value, ending)`, called at every ending, kept as the run's report.md.

A workflow declares `@awf.workflow(..., report=fn)`. At the end of every attempt (completed,
stopped, failed, timed-out, cancelled, parked) awf calls `fn` with the workflow's value (None
unless it completed) and the ending: its outcome, the stage and why, each stage entered and how,
and the command that goes on. The markdown it returns becomes `report.md` in the run's folder,
written atomically; an attempt that writes none removes the last one. Each attempt's text is
also in run.jsonl (a `report` line), so nothing a person read is lost. A report that throws is
said in the closing block and in run.jsonl; it never changes how the attempt ended.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..record import entries, folder
from ..record.layout import RunPaths


@dataclass(frozen=True)
class StageEntered:
    """A stage the attempt entered, in order: how (ran, reused, provided with --values) and to what end."""

    name: str
    how: str  # "ran", "reused" (an earlier attempt's record), "provided" (given with --values)
    outcome: str  # "succeeded", "stopped" or "failed"
    attempt: int  # the attempt whose record it is
    value: Any = None  # its recorded value (plain JSON), when it succeeded

    @property
    def ran(self) -> bool:
        return self.how == "ran"


@dataclass(frozen=True)
class Ending:
    """How an attempt ended, as `report(value, ending)` gets it."""

    run: str  # {workflow}/{id}
    attempt: int
    outcome: str  # completed, parked, stopped, failed, timed-out, cancelled
    exit_code: int
    stage: str | None  # the stage it ended in, if any
    reason: str | None  # why, in words, for any ending but completed
    go_on: str | None  # the command that goes on, for any ending but completed
    stages: tuple[StageEntered, ...]
    record: Path  # the run's folder

    @property
    def completed(self) -> bool:
        return self.outcome == "completed"


@dataclass(frozen=True)
class Written:
    """What came of the report: the file written (None when there is none), or why there is none."""

    path: Path | None
    error: str | None = None


def write_report(report: Any, value: Any, ending: Ending, paths: RunPaths) -> Written:
    """Call `report`, keep its markdown as report.md and in run.jsonl; never raises for the report's faults."""
    text, error = _call(report, value, ending)
    fields: entries.ReportFields = {"attempt": ending.attempt, "text": text}
    if error is not None:
        fields["error"] = error
    entries.append(paths.log, entries.report(**fields))  # first: the file may be replaced next
    folder.write_report(paths, text)
    return Written(paths.report if text is not None else None, error)


def _call(report: Any, value: Any, ending: Ending) -> tuple[str | None, str | None]:
    try:
        text = report(value, ending)
    except Exception as error:  # the workflow's own code: said, never a changed ending
        frames = traceback.extract_tb(error.__traceback__)[1:]  # from the report's own frame on
        where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
        return None, f"report raised {type(error).__name__}{where}: {error}"
    if text is None:
        return None, None
    if not isinstance(text, str):
        return None, f"report returned a {type(text).__name__}, not markdown text (a str) or None"
    return text, None
