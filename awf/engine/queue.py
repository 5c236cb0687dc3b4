"""`awf run --queue` and what `awf serve` starts of it: an attempt put in the run root's queue.

The run is made (or its continue checked) as a start here would make it, refusing the same;
then a `queued` line on serve says an attempt waits, with its priority and the command that
starts it. Serve starts it as a continue of the run (`awf run FILE --id ID --continue`), whose
`attempt-start` carries the line's token: that line, and the attempt lock the continue claims,
decide whether it started, so a serve killed and started again starts nothing twice. Until the
continue has claimed the run, its `wake.pid` keeps the run from being started again.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..record import entries, file_kinds, folder
from ..record.files import write_json
from ..record.layout import RunPaths
from ..record.liveness import process_start
from ..record.locks import holding
from ..record.queue import Interrupted, Queue, Reads, Waiting, interrupted_of, read_queue, waiting_of
from ..record.roots import run_root_for
from . import agent_limits
from .continue_command import continue_words
from .errors import Refusal
from .on_ray import Placement
from .placement import PLACED_ENV
from .request import RunRequest
from .self_command import awf_command


@dataclass(frozen=True)
class Queued:
    """An attempt put in the queue."""

    paths: RunPaths
    token: str
    place: int  # from 1
    of: int  # how many wait in all


@dataclass(frozen=True)
class Started:
    """A queued attempt serve started: the continue's process, and the attempt it will be."""

    waiting: Waiting
    pid: int
    attempt: int


def enqueue(request: RunRequest, priority: int) -> Queued:
    """Ready the run as a start here would, refusing the same, and put its attempt in the queue."""
    from .claim import prepare_elsewhere, working_folder

    # Refused here, before the run is made, not when serve starts it.
    agent_limits.resolve(request.max_agents_text, run_root_for(working_folder(request), request.run_root))
    paths, cwd = prepare_elsewhere(request)
    token = os.urandom(6).hex()
    with holding(paths.dir / "events.lock"):  # the lock a wake takes: one queued attempt at a time
        history = folder.read_history(paths, ended_stages=False)
        if history.queued is not None:
            raise Refusal(
                f"an attempt of {paths.name} is queued already; withdraw it with awf cancel {paths.name} "
                "before queueing another"
            )
        entries.append(
            paths.log,
            entries.queued(
                on="serve",
                token=token,
                by=socket.gethostname(),
                priority=priority,
                command=continue_words(request, paths),
                cwd=str(cwd),
            ),
        )
    queue = read_queue(paths.root)
    return Queued(paths, token, queue.place(paths.name) or len(queue.waiting), len(queue.waiting))


def start(waiting: Waiting, placement: Placement | None = None) -> Started | None:
    """Start the queued attempt, unless it started, was withdrawn, is starting already, or
    another run's attempt works in its folder. With `placement` (awf serve --on ray), the
    continue places it on Ray: its own `queued` line on Ray then stands for it, and it counts as
    alive from then on."""
    from .attempt_folder import busy
    from .events.wakes import starting, wake_pid_path

    paths = waiting.paths
    with holding(paths.dir / "events.lock"):
        try:
            history = folder.read_history(paths, ended_stages=False)
        except FileNotFoundError:
            return None
        line = waiting_of(history)
        if line is None or line["token"] != waiting.token:
            return None  # started or withdrawn since the queue was read
        if (history.last is not None and history.last.is_live()) or starting(paths) is not None:
            return None
        if busy(history.run, paths.root) is not None:
            return None  # another run works in its folder: it waits on, and is started once that ends
        attempt = history.last.number + 1 if history.last else 1
        words = [*(line.get("command") or []), *_on_ray(placement)]
        pid = _spawn(paths, words, Path(line.get("cwd") or paths.root), waiting.token)
        write_json(
            wake_pid_path(paths), file_kinds.wake_pid(attempt=attempt, pid=pid, process_start=process_start(pid))
        )
    return Started(waiting, pid, attempt)


def _on_ray(placement: Placement | None) -> list[str]:
    if placement is None:
        return []
    words = ["--on", "ray"]
    if placement.address:
        words += ["--ray-address", placement.address]
    if placement.resources:
        words += ["--ray-resources", json.dumps(placement.resources)]
    return words


def queue_again(one: Interrupted) -> Queued | None:
    """Queue the continue of a run whose attempt serve started was interrupted, once: with the
    priority, the folder and the limits it was queued with, and none of its --from-stage and
    --values (the continue goes on where the crash left it, as any continue after a crash does)."""
    paths = one.paths
    token = os.urandom(6).hex()
    with holding(paths.dir / "events.lock"):
        history = folder.read_history(paths, ended_stages=False)
        now = interrupted_of(paths, history) if history.queued is None else None
        if now is None or now.attempt != one.attempt:
            return None  # started again, queued, or woken since the queue was read
        placed = one.placed
        line = entries.queued(
            on="serve",
            token=token,
            by=socket.gethostname(),
            priority=placed.get("priority", 0),
            command=_without_redo(placed.get("command") or []),
            interrupted=one.attempt,
        )
        if "cwd" in placed:
            line["cwd"] = placed["cwd"]
        entries.append(paths.log, line)
    return Queued(paths, token, 0, 0)


def _without_redo(words: list[str]) -> list[str]:
    """The continue's words without --from-stage and --values, and their values."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("--from-stage", "--values"):
            skip = True
        else:
            kept.append(word)
    return kept


def withdraw_if_waiting(paths: RunPaths, token: str, reason: str) -> bool:
    """Withdraw the queued attempt (an `unqueued` line) if it still waits; whether it did."""
    with holding(paths.dir / "events.lock"):
        line = waiting_of(folder.read_history(paths, ended_stages=False))
        if line is None or line["token"] != token:
            return False
        entries.append(paths.log, entries.unqueued(token=token, reason=reason))
    return True


def read(root: Path, kept: Reads | None = None) -> Queue:
    """The run root's queue; a run a wake or serve is starting (its continue not yet claimed)
    counts as alive, and waits in the queue no more. `kept`: reads kept from the last time."""
    from ..record.summary import run_folders
    from .events.wakes import starting

    runs = list(run_folders(root))
    queue = read_queue(root, runs, kept)
    live = {paths.name for paths in queue.alive}
    queue.alive += [paths for paths in runs if paths.name not in live and starting(paths) is not None]
    live = {paths.name for paths in queue.alive}
    queue.waiting = [one for one in queue.waiting if one.paths.name not in live]
    return queue


def _spawn(paths: RunPaths, words: list[str], cwd: Path, token: str) -> int:
    """The continue, detached, its output kept in the run's wake.log."""
    command = [*awf_command(), *words]
    log = os.open(paths.dir / "wake.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(log, f"\n--- {' '.join(command)}\n".encode())
        process = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env={**os.environ, "NO_COLOR": "1", PLACED_ENV: json.dumps({"on": "serve", "token": token})},
        )
    finally:
        os.close(log)
    return process.pid
