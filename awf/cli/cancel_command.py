"""`awf cancel WORKFLOW/ID`: end a run's live attempt, on this machine or a node of a cluster.

The attempt ends cancelled, as after Ctrl-C: its open stage is recorded failed and a continue
redoes it. An attempt on this machine gets SIGTERM; one on another node is asked through a
`cancel` line in run.jsonl, which the task that placed it passes on as SIGTERM. An attempt still
queued on a scheduler is withdrawn and never starts, and so is the retry of an attempt that
stopped worth retrying. A run whose crashed attempt left agents
running has no attempt to end: those agents are ended, with every process they started.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..record import entries, folder
from ..record.layout import RunPaths
from ..record.liveness import this_boot
from ..record.locks import holding
from ..record.waiting import pending_retry, retry_time
from . import output
from .errors import CommandError, ExitCode, Problem
from .run_target import Where, find_run

if TYPE_CHECKING:
    from ..agents.leftovers import LeftRunning


def cancel_command(*, target: str, cwd: Path | None, run_root: Path | None) -> int:
    paths = find_run(target, Where.of(cwd, run_root))
    history = folder.read_history(paths)
    here = socket.gethostname()
    if history.queued is not None:
        started = _withdraw_or_started(paths, history.queued, here)
        if started is None:
            output.error_line(f"withdrew the queued attempt of {paths.name}: it will not start")
            return int(ExitCode.OK)
        history = started  # it took the run first: it is cancelled as it runs
    if pending_retry(history) is not None:
        started = _withdraw_retry(paths, here)
        if started is None:
            return int(ExitCode.OK)
        history = started  # the retry began first: it is cancelled as it runs
    last = history.last
    if last is None or not last.is_live():
        from ..agents.leftovers import left_by_crashes

        left = left_by_crashes(paths.log) if last is not None else []
        if left:
            return _end_left_running(paths.name, left)
        raise CommandError(
            f"run {paths.name} has no attempt running (it is {history.status}); there is nothing to cancel",
            Problem.NOT_RUNNING,
        )
    host = last.start.get("host") or "?"
    start = last.start.get("process_start") or ""
    local = start.startswith(this_boot() + ":") or not start
    # On another machine the task that placed the attempt passes the request on; here it is sent
    # now, and only once: a second SIGTERM would end the attempt at once, with no ending.
    entries.append(paths.log, entries.cancel(attempt=last.number, pid=last.pid, by=here, sent=local))
    if local:
        try:
            os.kill(last.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass  # it ended as it was asked
        output.error_line(f"sent SIGTERM to attempt {last.number} of {paths.name} (pid {last.pid}); it ends cancelled")
    else:
        output.error_line(
            f"asked attempt {last.number} of {paths.name} (pid {last.pid} on {host}) to end; it ends cancelled"
        )
    return int(ExitCode.OK)


def _withdraw(paths: RunPaths, queued: Mapping[str, Any], here: str) -> bool:
    """Append the `unqueued` line that withdraws a queued attempt; False when awf serve's continue
    of it holds the run already, and so may be past the point where it reads that line."""
    line = entries.unqueued(token=queued["token"], reason=f"withdrawn by awf cancel on {here}")
    if queued.get("on") != "serve":
        entries.append(paths.log, line)  # placed on Ray: its node checks for this line as it starts
        return True
    try:
        claim = folder.AttemptClaim(paths)  # a continue that claims the run after this reads the line
    except folder.Refused:
        return False
    try:
        entries.append(paths.log, line)
    finally:
        claim.release()
    return True


# How long awf cancel waits for a queued attempt that has taken its run to record its start.
STARTING_WAIT = 10.0


def _withdraw_or_started(paths: RunPaths, queued: Mapping[str, Any], here: str) -> folder.History | None:
    """Withdraw the queued attempt (None), or, when awf serve's continue of it has taken the run
    first, the run's history once that attempt has begun: it is cancelled as any live attempt."""
    waited_until = time.monotonic() + STARTING_WAIT
    while not _withdraw(paths, queued, here):
        history = folder.read_history(paths)
        last = history.last
        if history.queued is None or (last is not None and last.is_live()):
            return history
        if time.monotonic() > waited_until:
            raise CommandError(
                f"the queued attempt of {paths.name} is starting and has not recorded its start yet; "
                "run awf cancel again in a moment",
                Problem.NOT_RUNNING,
            )
        queued = history.queued
        time.sleep(0.1)
    return None


def _withdraw_retry(paths: RunPaths, here: str) -> folder.History | None:
    """Withdraw the retry the run's last attempt stopped with (None), under the lock wakes take
    to start it; or, when a wake has started the retry first, the run's history once its attempt
    has begun: it is cancelled as any live attempt."""
    from ..engine.events.wakes import starting

    waited_until = time.monotonic() + STARTING_WAIT
    while True:
        with holding(paths.dir / "events.lock"):
            history = folder.read_history(paths)
            retry, last = pending_retry(history), history.last
            if retry is None or last is None:
                return history
            if starting(paths) is None:
                entries.append(paths.log, entries.cancel(attempt=last.number, pid=last.pid, by=here, retry=True))
                go_on = (last.end.get("go_on") if last.end else None) or f"awf run FILE --id {paths.id} --continue"
                output.error_line(
                    f"withdrew the retry of {paths.name} due at {retry_time(retry)} ({retry['number']} of "
                    f"{retry['of']}): nothing continues it now but you: {go_on}"
                )
                return None
        history = folder.read_history(paths)
        if history.last is not None and history.last.is_live():
            return history
        if time.monotonic() > waited_until:
            raise CommandError(
                f"the retry of {paths.name} is starting and has not recorded its start yet; "
                "run awf cancel again in a moment",
                Problem.NOT_RUNNING,
            )
        time.sleep(0.1)


def _end_left_running(run: str, left: list[LeftRunning]) -> int:
    """End the agents a crash left running (each under its reaper, which takes every process it
    started with it), and wait until they are gone."""
    stuck = []
    for one in left:
        if one.end():
            output.error_line(
                f"ended agent {one.agent} of attempt {one.attempt} (pid {one.pid}), which a crash left running, "
                "and every process it started"
            )
        else:
            stuck.append(f"agent {one.agent} of attempt {one.attempt} (pid {one.pid})")
    if stuck:
        raise CommandError(
            f"run {run}: {', '.join(stuck)} did not end after SIGKILL; see what holds it with ps -o pid,stat,args "
            f"-g {left[0].pid} (a stat of D waits on the kernel, often a stuck mount)",
            Problem.NOT_ENDED,
        )
    return int(ExitCode.OK)
