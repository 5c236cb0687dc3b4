"""Waking runs with events: whether a run may start its next attempt now, and starting it once.

`awf send`, `awf wake`, `awf serve` and an attempt that parks all wake runs, often at the same
moment. A wake takes the run's inbox lock, looks, and starts at most one continue; it leaves a
`wake.pid` naming the continue's process, so until that process has claimed the run and ended,
the run counts as busy and no second continue is started for it. The attempt itself, once it
has written its ending, takes the lock again, clears its `wake.pid` and wakes the run once more
if an event came while it worked.

A run whose attempts keep dying is woken less and less often (at once after the first
interrupted attempt, then 1, 2 and 4 s after the start of each next one) and, after five
interrupted attempts in a row, not at all until a person runs `awf wake WORKFLOW/ID` or sends
it an event.

A run whose last attempt stopped with a retry (`wf.stop(..., retry_after=)`, `awf.Retry`) is
ready at the time its attempt-end line gives, events or none; `awf wake W/ID` or a new event
starts it at once.

A run stays where it was placed: when its last attempt was placed on Ray, its next is placed on
Ray too, with the same resources, whichever command wakes it (`awf serve --on ray` places every
run it wakes). The woken continue is then `awf run --continue --on ray`, which returns once the
attempt is placed; until the attempt starts, its `queued` line keeps the run busy.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...record import file_kinds, folder
from ...record.clock import parse_iso
from ...record.file_kinds import RetryFields
from ...record.files import write_json
from ...record.layout import RunPaths, working_folder
from ...record.liveness import is_alive, process_start
from ...record.locks import holding
from ...record.waiting import GIVE_UP_AFTER, crash_loop_text, pending_retry, retry_text
from ..on_ray import Placement
from ..placement import PLACED_ENV
from ..self_command import awf_command
from .attempt import held_back, is_ready, next_due, waiting_on

FIRST_BACKOFF = 1.0  # seconds; doubles with each interrupted attempt after the first
FOLDER_LOOK_EVERY = 2.0  # seconds between looks at a ready run whose folder another run works in


@dataclass(frozen=True)
class Look:
    """What a run with events needs now: `ready` to wake, or why not, and when to look again."""

    # ready | busy | folder-in-use | waiting | backing-off | crash-looping | held-back | ended | no-events | moved
    # | no-room
    state: str
    again: float | None = None  # a time to look again (a due time, the end of a back-off)
    why: str = ""


@dataclass(frozen=True)
class Woken:
    """A continue started for a run."""

    paths: RunPaths
    pid: int
    attempt: int
    forced: bool = False
    on: str | None = None  # "ray": the continue places the attempt there and returns
    retry: RetryFields | None = None  # the retry it is, of a stop worth retrying

    def said(self) -> str:
        """`attempt 2 started (pid 4242)`, or for Ray `attempt 2 being placed on Ray (pid 4242)`;
        for a retry, `…, retry 2 of 5`."""
        how = "being placed on Ray" if self.on == "ray" else "started"
        retry = f", retry {self.retry['number']} of {self.retry['of']}" if self.retry else ""
        return f"attempt {self.attempt} {how} (pid {self.pid}){retry}"


def wake_pid_path(paths: RunPaths) -> Path:
    return paths.dir / "wake.pid"


def backoff(interrupted: int) -> float:
    """How long after the last interrupted attempt started the next may start: at once after the
    first, then 1, 2, 4 seconds."""
    return 0.0 if interrupted <= 1 else FIRST_BACKOFF * 2 ** (interrupted - 2)


def interrupted_in_a_row(history: folder.History) -> int:
    """How many of the run's last attempts were interrupted, counting back from the last."""
    count = 0
    for attempt in reversed(history.attempts):
        if attempt.end is not None or attempt.is_live():
            break
        count += 1
    return count


def starting(paths: RunPaths) -> dict[str, Any] | None:
    """The `wake.pid` of a continue a wake started that is still alive, unless it is this process."""
    try:
        marker = folder.read_json_file(wake_pid_path(paths), "wake-pid")
    except (FileNotFoundError, folder.RecordError):
        return None
    if marker["pid"] == os.getpid() or not is_alive(marker["pid"], marker.get("process_start")):
        return None
    return marker


def look(paths: RunPaths, history: folder.History, *, force: bool = False, now: float | None = None) -> Look:
    """Whether the run may start its next attempt now. `force`: a person or a new event asks,
    so a run given up on as crash-looping, or backing off, is tried again."""
    now = time.time() if now is None else now
    last = history.last
    retry = pending_retry(history) if last is not None and last.end is not None else None
    if "events" not in history.run and retry is None:
        return Look("no-events", why="its workflow declares no events; continue it with awf run --continue")
    if last is None:
        return Look("ended", why="it has no attempt")
    if last.is_live():
        return Look("busy", why=f"attempt {last.number} is running (pid {last.pid})")
    if history.queued is not None:
        if history.queued.get("on") == "serve":
            return Look("busy", why="an attempt waits in the queue awf serve starts")
        on = history.queued.get("on", "a scheduler")
        return Look("busy", why=f"an attempt is queued on {on}, waiting for a node")
    marker = starting(paths)
    if marker is not None:
        return Look("busy", why=f"attempt {marker['attempt']} is starting (pid {marker['pid']})")
    if last.end is None:
        return _after_interrupted(paths, history, last, force=force, now=now)
    if retry is not None:
        # A stop worth retrying: due at its time, or now when a person (or a new event) asks.
        retry_at = parse_iso(retry["at"])
        if force or now >= retry_at:
            return _if_file_exists(paths, history, Look("ready", why=f"attempt {last.number} stopped with a retry"))
        return Look("waiting", again=retry_at, why=retry_text(retry))
    if waiting_on(paths, history) is None:
        return Look("ended", why=f"it is {last.end['outcome']}")
    if is_ready(paths, history, now):
        return _if_file_exists(paths, history, Look("ready"))
    due = next_due(history)
    return Look("waiting", again=due, why="what it waits for has not come")


def _after_interrupted(
    paths: RunPaths, history: folder.History, last: folder.Attempt, *, force: bool, now: float
) -> Look:
    """Whether a run whose last attempt was interrupted may start again now: not while an event is
    held back, nor, unless forced, after too many interruptions in a row or before its backoff."""
    held = held_back(paths, history)
    if held:
        return Look("held-back", why=held)
    count = interrupted_in_a_row(history)
    if not force:
        if count >= GIVE_UP_AFTER:
            return Look("crash-looping", why=crash_loop_text(paths.name, count))
        not_before = parse_iso(last.start["at"]) + backoff(count)
        if now < not_before:
            return Look("backing-off", again=not_before, why=f"{count} interrupted attempts in a row")
    return _if_file_exists(paths, history, Look("ready", why=f"attempt {last.number} was interrupted"))


def _if_file_exists(paths: RunPaths, history: folder.History, ready: Look) -> Look:
    from ..loader import split_target

    target = _target(history)
    if not split_target(target)[0].exists():
        return Look("moved", why=f"its workflow file {target} is gone; awf run NEWFILE --id {paths.id} --continue")
    from ..attempt_folder import busy

    in_use = busy(history.run, paths.root)
    if in_use is not None:
        # Not a crash, and not for good: looked at again until the folder is free.
        return Look("folder-in-use", again=time.time() + FOLDER_LOOK_EVERY, why=f"its folder is in use: {in_use}")
    return ready


def _target(history: folder.History) -> str:
    return (history.last.start.get("file") if history.last else None) or history.run.get("file") or ""


def wake(
    paths: RunPaths,
    *,
    force: bool = False,
    placement: Placement | None = None,
    room: Callable[[], bool] | None = None,
) -> Woken | Look:
    """Start the run's next attempt if it may start now, at most one at a time: placed with
    `placement` when given, else where the run's last attempt was placed, else here. `room`:
    whether another attempt may start now on the run root (awf serve --max-attempts)."""
    with holding(paths.dir / "events.lock"):
        try:
            history = folder.read_history(paths, ended_stages=False)
        except FileNotFoundError:
            return Look("ended", why="it has no record")
        except folder.RecordError as problem:
            return Look("ended", why=f"its record cannot be read: {problem}")
        seen = look(paths, history, force=force)
        if seen.state != "ready":
            return seen
        if room is not None and not room():
            return Look("no-room", why="as many attempts are alive as awf serve --max-attempts allows")
        attempt = history.last.number + 1 if history.last else 1
        where = placement or placed_before(history)
        pid = _spawn_continue(paths, history, where)
        write_json(
            wake_pid_path(paths),
            file_kinds.wake_pid(attempt=attempt, pid=pid, process_start=process_start(pid)),
        )
    forced = force and history.last is not None and history.last.end is None
    retry = pending_retry(history) if history.last is not None and history.last.end is not None else None
    return Woken(paths, pid, attempt, forced=forced, on="ray" if where is not None else None, retry=retry)


def after_attempt(paths: RunPaths) -> Woken | Look | None:
    """An attempt that has written its ending: it no longer counts as starting, and the run
    wakes again if an event came while it worked. A lock that cannot be taken leaves the run as
    its ending left it: the next `awf send` or `awf wake` names the file."""
    try:
        with holding(paths.dir / "events.lock"):
            try:
                marker = folder.read_json_file(wake_pid_path(paths), "wake-pid")
                if marker["pid"] == os.getpid():
                    wake_pid_path(paths).unlink()
            except (FileNotFoundError, folder.RecordError):
                pass
        return wake(paths)
    except folder.RecordError as problem:
        return Look("ended", why=f"its record cannot be read: {problem}")


def every_run(root: Path) -> list[RunPaths]:
    """Every run under `root` (the runs of one workflow in a folder each)."""
    found: list[RunPaths] = []
    try:
        workflows = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except FileNotFoundError:
        return found
    for workflow_dir in workflows:
        for run_dir in sorted(p for p in workflow_dir.iterdir() if (p / "run.jsonl").is_file()):
            found.append(RunPaths(root, workflow_dir.name, run_dir.name))
    return found


def placed_before(history: folder.History) -> Placement | None:
    """Where the run's last attempt was placed (on Ray, with the resources of its `queued` line);
    None for an attempt that ran where it was started."""
    placed = history.last.start.get("placed") if history.last else None
    if placed is None or placed["on"] != "ray":
        return None
    resources: dict[str, float] = {}
    for line in history.lines(frozenset({"queued"})):  # from the read the history was made of
        entry = line.entry
        if entry["kind"] == "queued" and entry["token"] == placed.get("token"):
            resources = dict(entry.get("resources") or {})
    return Placement(None, resources)


def _spawn_continue(paths: RunPaths, history: folder.History, placement: Placement | None) -> int:
    """Start `awf run --continue` for the run, detached, its output kept in the run's wake.log;
    with a placement, the continue places the attempt on Ray and returns."""
    command = [*awf_command(), "run", _target(history), "--id", paths.id, "--continue"]
    command += ["--run-root", str(paths.root)]
    if placement is not None:
        command += ["--on", "ray"]
        if placement.address:
            command += ["--ray-address", placement.address]
        if placement.resources:
            command += ["--ray-resources", json.dumps(placement.resources)]
    worktree = history.run.get("worktree")
    log = os.open(paths.dir / "wake.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(log, f"\n--- {' '.join(command)}\n".encode())
        process = subprocess.Popen(
            command,
            # A worktree someone removed is made again by the attempt: it starts in the repository.
            cwd=worktree["repository"] if worktree else working_folder(history.run, paths.root).now,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            # Where the waking attempt was placed is its own: the continue is placed as `placement` says.
            env={**{k: v for k, v in os.environ.items() if k != PLACED_ENV}, "NO_COLOR": "1"},
        )
    finally:
        os.close(log)
    return process.pid
