"""The live progress view on a terminal: one block, redrawn as the attempt moves.

A header (the run, the attempt, the stage it is in, the time so far); a line per stage, `✓` with
its time and summary, `↺` reused with the attempt that ran it (and its age once over an hour),
`■` stopped, `✗` failed, a spinner on the one running with a line per working agent; and, dim,
the stages an earlier attempt recorded that are still to come. Notices and `wf.log` lines print
above the block, so they stay in the terminal's scroll-back.

The view is an Observer: `awf run` drives it from the engine, `awf watch` from the record (see
replay.py), through the same calls, so both show the same thing.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..engine.durations import format_duration
from ..record.clock import age, parse_iso
from ..record.file_kinds import StageRecord
from .closing import closing_lines
from .lines import GONE_WITHOUT_ENDING, HOUR
from .lines import MARKS as STAGE_MARKS
from .one_line import first_line, recorded_by, skipped_text, status_text

if TYPE_CHECKING:
    from rich.live import Live

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
MARKS = {**STAGE_MARKS, "interrupted": "✗", "reused": "↺", "provided": "↺", "skipped": "↷"}
STYLES = {
    "succeeded": "green",
    "stopped": "yellow",
    "failed": "red",
    "interrupted": "red",
    "reused": "cyan",
    "provided": "cyan",
    "running": "bold",
    "to-come": "dim",
}


@dataclass
class StageRow:
    name: str
    state: str  # running, succeeded, stopped, failed, reused, provided, to-come
    record: Mapping[str, Any] | None = None
    started: float | None = None  # wall-clock, while it runs


@dataclass
class AgentRow:
    key: str
    harness: str
    model: str | None
    label: str
    turn: int
    started: float


@dataclass
class ViewState:
    """Everything the block shows, changed only through the Observer calls."""

    name: str = ""
    attempt: int = 0
    started: float = field(default_factory=time.time)
    rows: list[StageRow] = field(default_factory=list)
    agents: dict[str, AgentRow] = field(default_factory=dict)
    ended: float | None = None
    status: str | None = None  # what the workflow says it is doing (wf.status), until the next or the end

    def row(self, name: str) -> StageRow | None:
        return next((row for row in self.rows if row.name == name), None)

    def place(self, row: StageRow) -> None:
        """A stage entered now: it takes the place of its to-come line, or goes after the last entered."""
        old = self.row(row.name)
        if old is not None:
            self.rows.remove(old)
        entered = [i for i, item in enumerate(self.rows) if item.state != "to-come"]
        self.rows.insert(entered[-1] + 1 if entered else 0, row)

    @property
    def current(self) -> str | None:
        return next((row.name for row in self.rows if row.state == "running"), None)


def stage_seconds(record: Mapping[str, Any]) -> float | None:
    """A stage's time as its record says (so the view reads the same however it is driven)."""
    try:
        return max(parse_iso(record["ended"]) - parse_iso(record["started"]), 0.0)
    except (KeyError, TypeError, ValueError):
        return None


def render_lines(state: ViewState, now: float | None = None) -> list[tuple[str, str]]:
    """The block as (text, style) lines."""
    now = time.time() if now is None else now
    elapsed = (state.ended if state.ended is not None else now) - state.started
    head = f"▶ {state.name} · attempt {state.attempt}"
    if state.current:
        head += f" · {state.current}"
    lines = [(f"{head} · {format_duration(max(elapsed, 0.0))}", "bold")]
    width = max((len(row.name) for row in state.rows), default=0)
    for row in state.rows:
        lines.append((f"  {_stage_text(row, width, now)}", STYLES.get(row.state, "")))
        if row.state == "running":
            for agent in state.agents.values():
                lines.append((f"      {_agent_text(agent, now)}", ""))
    if state.status and state.ended is None:
        lines.append((f"  … {state.status}", "cyan"))
    return lines


def _stage_text(row: StageRow, width: int, now: float) -> str:
    record = row.record or {}
    name = row.name.ljust(width)
    if row.state == "running":
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        return f"{frame} {name}  {format_duration(max(now - (row.started or now), 0.0))}"
    if row.state == "to-come":
        return f"· {name}  recorded by {recorded_by(record)}, to come"
    if row.state == "provided":
        return f"↺ {name}  given with --values"
    if row.state == "skipped":
        return f"↷ {name}  {skipped_text(record)}"
    if row.state == "reused":
        seconds = age(record.get("ended"), now)
        old = f", {format_duration(seconds)} ago" if seconds is not None and seconds >= HOUR else ""
        summary = f" · {record['summary']}" if record.get("summary") else ""
        return f"↺ {name}  from {recorded_by(record)}{old}{summary}"
    if row.state == "succeeded":
        seconds = stage_seconds(record)
        took = format_duration(seconds) if seconds is not None else ""
        summary = f" · {record['summary']}" if record.get("summary") else ""
        return f"✓ {name}  {took}{summary}".rstrip()
    return f"{MARKS.get(row.state, '?')} {name}  {row.state}: {first_line(record.get('reason'))}".rstrip()


def _agent_text(agent: AgentRow, now: float) -> str:
    what = " · ".join(part for part in (agent.harness, agent.model, agent.label) if part)
    again = f" #{agent.turn}" if agent.turn > 1 else ""
    return f"◦ {agent.key}{again}  {what}  {format_duration(max(now - agent.started, 0.0))}"


class _SafeStream:
    """A terminal that may go away (SIGHUP): writes to it never fail the run."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except (OSError, ValueError):
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def isatty(self) -> bool:
        try:
            return self.stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", "utf-8")


class LiveView:
    """The Observer that draws the live block on a terminal (stderr)."""

    def __init__(self, stream: TextIO | None = None, *, color: bool = True) -> None:
        from rich.console import Console

        self.console: Console = Console(
            file=_SafeStream(stream or sys.stderr),  # type: ignore[arg-type]  # write and flush are all rich uses
            force_terminal=True,
            no_color=True if not color else None,
            highlight=False,
            emoji=False,
            soft_wrap=False,
        )
        self.state: ViewState = ViewState()
        self.lock: threading.Lock = threading.Lock()
        self.live: Live | None = None
        self.record_dir: Path | None = None
        self._earlier: dict[str, StageRecord] | None = None
        self._models: dict[str, str | None] = {}

    # What the replay of a record tells the view before the attempt starts.
    def earlier_records(self, records: dict[str, StageRecord]) -> None:
        self._earlier = records

    def started_at(self, seconds: float) -> None:
        self.state.started = seconds

    def agent_opened(self, key: str, model: str | None) -> None:
        self._models[key] = model

    def redraw(self) -> None:
        """Show a change now, not at the next tick."""
        if self.live is not None:
            self.live.refresh()

    def __rich__(self) -> Any:
        from rich.text import Text

        with self.lock:
            lines = render_lines(self.state)
        block = Text()
        for i, (text, style) in enumerate(lines):
            block.append(text, style=style or None)
            if i < len(lines) - 1:
                block.append("\n")
        return block

    def _print(self, text: str, style: str | None = None) -> None:
        from rich.text import Text

        self.console.print(Text(text, style=style or ""), soft_wrap=True)

    # The Observer.
    def attempt_started(self, workflow: str, run_id: str, attempt: int, record_dir: Path) -> None:
        from rich.live import Live

        self.record_dir = record_dir
        earlier = self._earlier if self._earlier is not None else _current_records(record_dir, attempt)
        with self.lock:
            self.state.name = f"{workflow}/{run_id}"
            self.state.attempt = attempt
            self.state.rows = [StageRow(name, "to-come", record) for name, record in earlier.items()]
        live = Live(
            self,
            console=self.console,
            refresh_per_second=8,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        live.start()
        self.live = live
        import atexit

        atexit.register(self.stop)  # an error that ends the process early must not leave the block spinning

    def stop(self) -> None:
        """Stop redrawing, leaving the last frame on the terminal."""
        if self.live is not None:
            live, self.live = self.live, None
            live.transient = False
            live.stop()

    def notice(self, text: str) -> None:
        self._print(f"! {text}", "yellow")

    def stage_reused(self, name: str, value: Any, record: Mapping[str, Any] | None, how: str) -> None:
        with self.lock:
            self.state.place(StageRow(name, how if how in ("provided", "skipped") else "reused", record))

    def stage_started(self, name: str, why: str | None) -> None:
        with self.lock:
            if not any(row.state == "running" for row in self.state.rows):
                self.state.agents.clear()  # a fan-out's branches run side by side, their agents too
            self.state.place(StageRow(name, "running", None, time.time()))

    def stage_ended(self, record: Mapping[str, Any], seconds: float) -> None:
        with self.lock:
            row = self.state.row(record["stage"])
            if row is None:
                row = StageRow(record["stage"], record["outcome"])
                self.state.place(row)
            row.state, row.record = record["outcome"], record
            if not any(row.state == "running" for row in self.state.rows):
                self.state.agents.clear()

    def logged(self, stage: str | None, message: str) -> None:
        self._print(f"  {message}")

    def status(self, text: str, progress: float | None) -> None:
        with self.lock:
            self.state.status = status_text(text, progress) or None
        self.redraw()

    def group_started(self, label: str, branches: int, concurrency: int | None) -> None:
        at_once = f", {concurrency} at a time" if concurrency is not None and concurrency < branches else ""
        self._print(f"⇉ {label}  {branches} branch{'' if branches == 1 else 'es'}{at_once}")

    def group_ended(self, label: str, tally: str) -> None:
        self._print(f"⇇ {label}  {tally}")

    def branch_started(self, label: str, branch: str) -> None:
        self._print(f"  ▸ {branch}")

    def branch_ended(self, label: str, branch: str, outcome: str, reason: str | None, seconds: float) -> None:
        said = (
            format_duration(seconds)
            if outcome == "succeeded"
            else outcome + (f": {first_line(reason)}" if reason else "")
        )
        self._print(f"  {MARKS.get(outcome, '✗')} {branch}  {said}", STYLES.get(outcome))

    def agent_turn_started(self, stage: str | None, agent: str, harness: str, turn: int, label: str) -> None:
        model = self._models.get(agent)
        if agent not in self._models and self.record_dir is not None:
            model = self._models[agent] = _agent_model(self.record_dir, self.state.attempt, agent)
        with self.lock:
            self.state.agents[agent] = AgentRow(agent, harness, model, label, turn, time.time())
        self.redraw()  # an agent's work takes a while: show it at once, not at the next tick

    def agent_turn_nudged(self, stage: str | None, agent: str, why: str) -> None:
        pass  # the agent's line stays; the record and `awf logs` tell the rest

    def agent_turn_waiting(self, stage: str | None, agent: str, why: str) -> None:
        self._print(f"  … {agent} is {why}", "yellow")

    def agent_turn_ended(self, stage: str | None, agent: str, outcome: str, reason: str | None, seconds: float) -> None:
        with self.lock:
            self.state.agents.pop(agent, None)

    def close(
        self,
        out: dict[str, Any],
        *,
        detail: str | None = None,
        hints: list[str] | None = None,
        costs: list[Any] | None = None,
    ) -> None:
        """Stop redrawing, print the block as it ended, then the closing block."""
        with self.lock:
            try:
                self.state.ended = parse_iso(out["ended"])
                self.state.started = parse_iso(out["started"])
            except (KeyError, TypeError, ValueError):
                self.state.ended = time.time()
            for row in self.state.rows:
                if row.state == "running":
                    # It ended with no record: the process is gone.
                    row.state, row.record = "interrupted", {"reason": GONE_WITHOUT_ENDING}
            self.state.agents.clear()
            final = render_lines(self.state)
        if self.live is not None:
            live, self.live = self.live, None
            live.stop()
        for text, style in final:
            self._print(text, style)
        for line in closing_lines(out, record_dir=self.record_dir, detail=detail, hints=hints, costs=costs):
            self._print(line)

    def closing(self, ending: Any) -> None:
        """`awf run`'s ending."""
        self.close(ending.out, detail=ending.detail, hints=ending.hints, costs=ending.costs)


def _current_records(record_dir: Path, attempt: int) -> dict[str, StageRecord]:
    """The stage records an earlier attempt left, readable ones only: the view's to-come lines."""
    from ..record.folder import read_stage_records
    from ..record.layout import RunPaths

    paths = RunPaths(record_dir.parent.parent, record_dir.parent.name, record_dir.name)
    return {
        name: record
        for name, record in read_stage_records(paths).items()
        if isinstance(record, dict) and record.get("attempt", attempt) < attempt
    }


def _agent_model(record_dir: Path, attempt: int, key: str) -> str | None:
    """The model the agent was opened with, from its `agent` line in the log."""
    from ..record.summary import agent_line

    entry = agent_line(record_dir / "run.jsonl", attempt, key)
    return entry.get("model") if entry else None
