"""`awf watch`: the progress view of a run started elsewhere, until its attempt ends."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from ..record.errors import RecordError
from . import output
from .errors import Problem
from .run_target import Where, find_run

# An attempt that never ended (its process is gone) has no exit code of its own.
INTERRUPTED_EXIT = 1


def watch_command(*, target: str, color: bool, cwd: Path | None, run_root: Path | None) -> int:
    from ..view.choose import choose_view
    from ..view.follow import GONE, Follower
    from ..view.replay import Replay

    where = Where.of(cwd, run_root)
    paths = find_run(target, where)
    view = choose_view(color)
    try:
        with Follower(paths.dir, paths.log) as follower:
            replay = Replay(paths, view)
            if not _begin(replay, follower, paths):
                output.error(f"the queued attempt of {paths.name} was withdrawn before it started")
                return Problem.NO_SUCH_RUN.code
            if replay.start is None:
                output.error(f"run {paths.name} has no attempt to watch")
                return Problem.NO_SUCH_RUN.code
            seen_alive = False
            if replay.end is None:
                from ..record.liveness import is_alive

                seen_alive = is_alive(replay.start["pid"], replay.start.get("process_start"))
                follower.watch_process(replay.start["pid"], replay.start.get("process_start"))
                replay.look_at_turns()
            while replay.end is None:
                gone = follower.wait() == GONE
                replay.feed(follower.new_lines())
                replay.look_at_turns()
                if gone and replay.end is None:
                    # The attempt lived until this watch saw its process go; one gone before the
                    # watch began lived at least until its log last moved.
                    died = time.time() if seen_alive else _last_moved(paths.log)
                    code = _close(view, replay.interrupted(_go_on(paths, where.here), died), INTERRUPTED_EXIT)
                    from ..agents.leftovers import left_by_crashes, left_lines

                    for line in left_lines(left_by_crashes(paths.log)):
                        output.error_line(f"  left running: {line}")
                    return code
            out = replay.out()
    except RecordError as problem:
        _stop(view)
        output.error(f"the run's record cannot be read: {problem}")
        return Problem.UNREADABLE.code
    except KeyboardInterrupt:
        _stop(view)
        return 130
    return _close(view, out, out.get("exit_code") or 0)


def _begin(replay: Any, follower: Any, paths: Any) -> bool:
    """The replay begun at the attempt to show: the last one, or, for a run whose attempt waits in
    the queue awf serve starts, that one once it starts (said while it waits). False when the
    queued attempt is withdrawn before it starts."""
    from ..record.folder import read_history
    from ..record.queue import read_queue, waiting_of

    waiting = waiting_of(read_history(paths))
    lines = list(follower.new_lines())
    token = waiting["token"] if waiting is not None else None
    if token is None or _answered(lines, token):
        replay.begin(lines)
        return True
    replay.remember(lines)
    place = read_queue(paths.root).place(paths.name)
    output.error_line(
        f"{paths.name} waits in the queue awf serve starts (place {place}); its attempt shows here once it starts"
    )
    while True:
        follower.wait()
        lines = list(follower.new_lines())
        if any(line.kind == "unqueued" and line.entry.get("token") == token for line in lines):
            return False
        if _answered(lines, token):
            replay.begin(lines)
            return True
        replay.remember(lines)


def _answered(lines: list[Any], token: str) -> bool:
    """Whether the queued attempt of `token` started among `lines`."""
    return any(
        line.kind == "attempt-start" and (line.entry.get("placed") or {}).get("token") == token for line in lines
    )


def _go_on(paths: Any, here: Path) -> str | None:
    from ..record.detail import go_on_command
    from ..record.folder import read_history

    return go_on_command(read_history(paths), paths, here)


def _last_moved(log: Path) -> float | None:
    try:
        return log.stat().st_mtime
    except OSError:
        return None


def _close(view: Any, out: dict[str, Any], code: int) -> int:
    close = getattr(view, "close", None)
    if close is not None:
        close(out)
    else:
        from ..view.closing import closing_lines
        from ..view.lines import GONE_WITHOUT_ENDING

        lines = closing_lines(out)
        if out["outcome"] == "interrupted" and out.get("stage"):
            lines.insert(0, f"✗ {out['stage']}  interrupted: {GONE_WITHOUT_ENDING}")
        for line in lines:
            try:
                print(line, file=sys.stderr, flush=True)
            except (OSError, ValueError):
                break
    return code


def _stop(view: Any) -> None:
    stop = getattr(view, "stop", None)
    if stop is not None:
        stop()
