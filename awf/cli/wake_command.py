"""`awf wake` (for cron) and `awf serve` (always on): start the parked runs that are ready."""

from __future__ import annotations

import signal
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from ..engine import attempt_events
from ..record import folder
from . import output
from .run_target import Where

IDLE_CHECK = 30.0  # seconds between looks when nothing is due and nothing changes


def wake_command(*, cwd: Path | None, run_root: Path | None) -> int:
    where = Where.of(cwd, run_root)
    for paths, pid in attempt_events.wake_ready(where.root):
        output.result(f"woke {paths.name} (pid {pid})")
    for text in attempt_events.held_back_runs(where.root):
        output.error(text)
    return 0


def serve_command(*, cwd: Path | None, run_root: Path | None) -> int:
    where = Where.of(cwd, run_root)
    from filelock import FileLock, Timeout

    where.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = FileLock(str(where.root / ".serve.lock"), timeout=0, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        output.error(f"another awf serve already serves {where.root}; one is enough")
        return 2
    try:
        return _serve(where.root)
    finally:
        lock.release()


def _serve(root: Path) -> int:
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    changed = threading.Event()
    stopping = threading.Event()

    class Changes(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            path = str(getattr(event, "dest_path", "") or event.src_path)
            if path.endswith(("events.jsonl", "run.jsonl")):
                changed.set()

    def stop(_number: int, _frame: Any) -> None:
        stopping.set()
        changed.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, stop)
    watcher = Observer()
    watcher.schedule(Changes(), str(root), recursive=True)
    watcher.start()
    log = _Log(root / "serve.log")
    log.say(f"serving {root}")
    said: set[str] = set()
    try:
        while not stopping.is_set():
            changed.clear()
            for paths, pid in attempt_events.wake_ready(root):
                log.say(f"woke {paths.name} (pid {pid})")
            held = set(attempt_events.held_back_runs(root))
            for text in sorted(held - said):  # once each, not at every look
                log.say(text)
            said = held
            due = [
                d
                for _, history in attempt_events.parked_runs(root)
                if (d := attempt_events.next_due(history)) is not None
            ]
            wait = IDLE_CHECK if not due else max(0.05, min(IDLE_CHECK, min(due) - time.time() + 0.05))
            changed.wait(wait)
    finally:
        watcher.stop()
        watcher.join(timeout=5)
        log.say("stopped; parked runs stay parked until the next wake")
    return 0


class _Log:
    """What serve did, on stderr and appended to serve.log in the run root."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def say(self, text: str) -> None:
        line = f"{datetime.now().astimezone().isoformat(timespec='seconds')} {text}"
        output.error_line(line)
        folder.append_line(self.path, {"at": line[:25], "text": text}, sync=False)
