"""The attempt's events: `wf.events`, the redo mark of a run with events, and waking a parked run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..record import folder
from ..record.clock import parse_iso
from ..record.inbox import read_events
from ..record.layout import RunPaths
from .context import AttemptState
from .events import EventsApi, Replay
from .loader import split_target
from .plan import RedoMark
from .schema import load_schema
from .workflow import Workflow


def declared(workflow: Workflow[Any]) -> dict[str, Any]:
    """The workflow's events and their schemas, as JSON (None: any value)."""
    events = workflow.events or {}
    return {
        name: (load_schema(spec, workflow.base_dir, f"event {name}").schema if spec is not None else None)
        for name, spec in events.items()
    }


def attach(state: AttemptState, workflow: Workflow[Any], paths: RunPaths) -> None:
    """Give the attempt its `wf.events`, with what earlier attempts recorded of their waits."""
    replay = Replay.read(paths) if paths.log.exists() else Replay()
    state.events = EventsApi(state, dict(workflow.events or {}), replay)


def record_redo(paths: RunPaths, attempt: int, stage: str) -> None:
    folder.append_line(paths.log, folder.entry("redo", attempt=attempt, stage=stage))


def redo_mark(paths: RunPaths, attempt: int, from_stage: str | None) -> tuple[RedoMark | None, str | None]:
    """The redo that holds for this attempt, and the --from-stage it still has to reach.

    A --from-stage given now starts a new redo. Otherwise the run's last redo holds: reached, it
    marks which records are older than it; not yet reached (its attempt crashed or stopped on the
    way), this attempt goes on towards its stage.
    """
    if from_stage is not None:
        return RedoMark(attempt, from_stage), from_stage
    if not paths.log.exists():
        return None, None
    last: dict[str, Any] | None = None
    reached: dict[str, Any] | None = None
    for line in folder.read_lines(paths.log):
        entry = line.entry
        if entry["kind"] == "redo":
            last, reached = entry, None
        elif entry["kind"] == "redo-reached" and last is not None and entry.get("redo_attempt") == last["attempt"]:
            reached = entry
    if last is None:
        return None, None
    if reached is None:
        return RedoMark(last["attempt"], last["stage"]), last["stage"]
    return RedoMark(
        last["attempt"], last["stage"], True, set(reached["before_stages"]), set(reached["before_waits"])
    ), None


def waiting_on(paths: RunPaths, history: folder.History) -> list[dict[str, Any]] | None:
    """What a parked run waits for, or None when it is not parked."""
    last = history.last
    if last is None or last.end is None or last.end["outcome"] != "parked":
        return None
    return list(last.end.get("waits") or [])


def is_ready(paths: RunPaths, history: folder.History, now: float | None = None) -> bool:
    """A parked run that now has what it waits for: an event not yet taken, or a due time passed."""
    waits = waiting_on(paths, history)
    if not waits:
        return False
    now = time.time() if now is None else now
    if any(wait.get("due") and parse_iso(wait["due"]) <= now for wait in waits):
        return True
    names = {name for wait in waits for name in wait.get("names") or []}
    if not names:
        return False
    taken = Replay.read(paths).taken
    return any(event.name in names and event.id not in taken for event in read_events(paths))


def next_due(history: folder.History) -> float | None:
    """The earliest due time a parked run waits for."""
    last = history.last
    if last is None or last.end is None or last.end["outcome"] != "parked":
        return None
    dues = [parse_iso(wait["due"]) for wait in last.end.get("waits") or [] if wait.get("due")]
    return min(dues) if dues else None


def spawn_continue(paths: RunPaths, history: folder.History) -> int:
    """Start `awf run --continue` for the run, detached, its output kept in the run's wake.log."""
    file = history.last.start.get("file") if history.last else None
    file = file or history.run.get("file")
    command = [
        sys.executable,
        "-m",
        "awf",
        "run",
        str(file),
        "--id",
        paths.id,
        "--continue",
        "--run-root",
        str(paths.root),
    ]
    log = os.open(paths.dir / "wake.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(log, f"\n--- {' '.join(command)}\n".encode())
        process = subprocess.Popen(
            command,
            cwd=history.run["cwd"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        os.close(log)
    return process.pid


def wake_if_ready(paths: RunPaths) -> int | None:
    """Start the next attempt of a parked run that has what it waits for and no live attempt."""
    try:
        history = folder.read_history(paths)
    except (FileNotFoundError, folder.RecordError):
        return None
    if history.last is None or history.last.is_live():
        return None
    interrupted = "events" in history.run and history.last.status == "interrupted"
    if not interrupted and not is_ready(paths, history):
        return None
    if interrupted and held_back(paths, history):
        return None  # never over an agent the crashed attempt left running: a person decides
    target = history.last.start.get("file") or history.run.get("file") or ""
    if not split_target(target)[0].exists():
        return None  # the workflow's file moved: `awf run NEWFILE --id ID --continue` goes on
    return spawn_continue(paths, history)


def parked_runs(root: Path) -> list[tuple[RunPaths, folder.History]]:
    """Every run with events under `root` that parked, or whose last attempt was interrupted.

    A crash costs a run with events nothing: the next wake goes on from where it was.
    """
    found: list[tuple[RunPaths, folder.History]] = []
    try:
        workflows = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except FileNotFoundError:
        return found
    for workflow_dir in workflows:
        for run_dir in sorted(p for p in workflow_dir.iterdir() if (p / "run.jsonl").is_file()):
            paths = RunPaths(root, workflow_dir.name, run_dir.name)
            try:
                history = folder.read_history(paths)
            except folder.RecordError:
                continue  # a damaged run is for `awf runs` to report; waking skips it
            if history.last is None or "events" not in history.run or history.last.is_live():
                continue
            if waiting_on(paths, history) is not None or history.last.status == "interrupted":
                found.append((paths, history))
    return found


def held_back(paths: RunPaths, history: folder.History) -> str | None:
    """Why a wake leaves this interrupted run alone: an agent its crashed attempt left still runs."""
    from .attempt_agents import left_running

    left = left_running(paths, history)
    if not left:
        return None
    agents = ", ".join(f"agent {one.agent} of attempt {one.attempt} (pid {one.pid})" for one in left)
    file = (history.last.start.get("file") if history.last else None) or history.run.get("file") or "FILE"
    return (
        f"not woken: {paths.name} was interrupted, and {agents} it left still runs; end it with "
        f"{left[0].end_command}, or go on with awf run {file} --id {paths.id} --continue --end-leftovers"
    )


def held_back_runs(root: Path) -> list[str]:
    """Each interrupted run under `root` a wake leaves alone, and why."""
    return [text for paths, history in parked_runs(root) if (text := held_back(paths, history))]


def wake_ready(root: Path) -> list[tuple[RunPaths, int]]:
    """Start the next attempt of every parked run under `root` that has what it waits for."""
    woken = []
    for paths, _history in parked_runs(root):
        pid = wake_if_ready(paths)
        if pid is not None:
            woken.append((paths, pid))
    return woken
