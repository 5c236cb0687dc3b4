"""`awf wake` (for cron): start the runs with events that are ready; `awf wake W/ID`: try one again."""

from __future__ import annotations

from pathlib import Path

from ..engine.events import wakes
from ..record.layout import RunPaths
from . import output
from .run_target import Where, find_run

NOT_WOKEN = 2


def wake_command(*, target: str | None, cwd: Path | None, run_root: Path | None) -> int:
    where = Where.of(cwd, run_root)
    one = find_run(target, where) if target is not None else None
    if one is not None:
        return _wake_one(one)
    for paths in wakes.every_run(where.root):
        woken = wakes.wake(paths)
        if isinstance(woken, wakes.Woken):
            output.result(f"woke {paths.name}: {woken.said()}")
        elif woken.state == "crash-looping":
            output.error_line(f"skipped {paths.name}, {woken.why}")
        elif woken.state == "folder-in-use":
            output.error_line(f"skipped {paths.name} for now, {woken.why}")
        elif woken.state == "held-back":
            output.error(woken.why)
    return 0


def _wake_one(paths: RunPaths) -> int:
    """Wake one run now, even one given up on as crash-looping or backing off."""
    woken = wakes.wake(paths, force=True)
    if isinstance(woken, wakes.Woken):
        output.result(f"woke {paths.name}: {woken.said()}")
        return 0
    if woken.state in ("busy", "folder-in-use", "waiting"):
        waits = "still waits: what it waits for has not come" if woken.state == "waiting" else woken.why
        output.error_line(f"{paths.name} {waits}; not woken")
        return 0
    output.error(woken.why if woken.state == "held-back" else f"{paths.name} cannot be woken: {woken.why}")
    return NOT_WOKEN
