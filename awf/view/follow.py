"""Waiting for a run's record to change, without a loop that burns CPU while nothing does.

watchdog reports each change under the run's folder; the kernel reports the end of the attempt's
process (a pidfd), so a `kill -9`, which writes nothing, is seen at once too. A reader blocks
until one of them speaks, then reads only what was appended since it last read.
"""

from __future__ import annotations

import os
import queue
import select
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..record.errors import RecordError
from ..record.liveness import is_alive
from ..record.log import Line, parse_lines, raw_lines

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

CHANGED = "changed"
GONE = "gone"
# Where the kernel cannot report a process's end, it is looked at this often while nothing changes.
FALLBACK_CHECK = 1.0


class Follower:
    """Tails one run's log: `new_lines()` gives the complete lines appended since the last call."""

    def __init__(self, run_dir: Path, log: Path, offset: int = 0) -> None:
        self.run_dir = run_dir
        self.log = log
        self.offset: int = offset
        self._events: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._watcher: BaseObserver | None = None
        self._pid: tuple[int, str | None] | None = None
        self._pidfd: int | None = None

    def __enter__(self) -> Follower:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def start(self) -> None:
        """Watch the folder. Call before the first read, so no change falls between the two."""
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        events = self._events

        class Changed(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.event_type not in ("opened", "closed_no_write"):
                    events.put(CHANGED)

        watcher = Observer()
        watcher.schedule(Changed(), str(self.run_dir), recursive=True)
        watcher.daemon = True
        watcher.start()
        self._watcher = watcher

    def watch_process(self, pid: int, process_start: str | None) -> None:
        """Also wake when this process ends (or at once, when it is already gone)."""
        self._pid = (pid, process_start)
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._pidfd = None
        if not is_alive(pid, process_start):
            self._events.put(GONE)
            return
        if self._pidfd is not None:
            threading.Thread(target=self._wait_for_exit, args=(self._pidfd,), daemon=True).start()

    def _wait_for_exit(self, fd: int) -> None:
        try:
            select.select([fd], [], [])
        except (OSError, ValueError):
            return
        self._events.put(GONE)

    def wait(self) -> str:
        """Block until the folder changes or the process ends; CHANGED or GONE."""
        while True:
            try:
                first = self._events.get(
                    timeout=None if self._pidfd is not None or self._pid is None else FALLBACK_CHECK
                )
            except queue.Empty:
                if self._pid is not None and not is_alive(*self._pid):
                    return GONE
                continue
            seen = {first}
            while True:  # one read answers a burst of changes
                try:
                    seen.add(self._events.get_nowait())
                except queue.Empty:
                    break
            return GONE if GONE in seen else CHANGED

    def new_lines(self) -> Iterator[Line]:
        """The complete lines appended since the last call, read one at a time as they are taken;
        a half-written last one waits for the next call."""
        return parse_lines(self.log, self._appended())

    def _appended(self) -> Iterator[tuple[int, bytes]]:
        try:
            for offset, raw in raw_lines(self.log, self.offset):
                self.offset = offset + len(raw)  # taken: the next call starts after it
                yield offset, raw
        except FileNotFoundError:
            raise RecordError(self.log, "is gone: the run's folder was moved or deleted") from None

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if self._pidfd is not None:
            try:
                os.close(self._pidfd)
            except OSError:
                pass
            self._pidfd = None
