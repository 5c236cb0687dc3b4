"""`awf serve`: wake runs with events as their events arrive and their times come, asleep between.

Serve looks at a run only when something happens that can make it ready: an event appended to
its inbox, an attempt ending (its `attempt.lock` closed, as it is even when the process dies),
or a due time or the end of a back-off coming. Its own reads of the record wake nothing.

Serve also starts the attempts `awf run --queue` put in the run root's queue, highest priority
first, then the oldest; with `--max-attempts N`, never more than N attempts alive at once on the
run root, its wakes among them: a ready run waits for room as a queued attempt does. A run's
`run.jsonl` closing may be a new `queued` line, so it has serve read the queue again (while there
is room: a full queue waits for an attempt's lock to close).

`awf serve --on ray` places each attempt it wakes, or starts from the queue, on a Ray cluster;
one placed that waits for a node counts toward `--max-attempts`. An attempt on another node
ends, and `awf send` on another machine queues, where no file event reaches this one, so serve
then also looks at every run once every LOOK_EVERY_ON_RAY seconds.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from ..engine import agent_limits, queue
from ..engine.errors import Refusal
from ..engine.events import wakes
from ..engine.on_ray import Placement, parse_resources, require_ray
from ..record.clock import parse_iso
from ..record.errors import RecordError
from ..record.files import append_line, is_temp_name
from ..record.layout import RunPaths
from ..record.queue import Interrupted, Reads
from ..record.waiting import GIVE_UP_AFTER
from . import output
from .errors import Problem
from .run_target import TargetError, Where

# The files whose change can make a run ready: its inbox, and the lock its attempt holds for life;
# and its log, which a new `queued` line is appended to.
WATCHED = ("events.jsonl", "attempt.lock", "run.jsonl")
ENDING_LOOKS = 20  # looks at a run whose lock closed while its attempt still seemed alive (10 s in all)
LOOK_EVERY_ON_RAY = 10.0  # seconds between looks at every run when attempts run on other nodes
# Seconds between checks that the run root is still the folder serve watches and holds its lock
# in; its parent is watched too, so a root removed is most often seen at once.
ROOT_CHECK_EVERY = 5.0
GONE = 3  # the exit code when the run root was removed or replaced under serve


def serve_command(
    *,
    cwd: Path | None,
    run_root: Path | None,
    on: str | None = None,
    ray_address: str | None = None,
    ray_resources: str | None = None,
    max_attempts: int | None = None,
    max_agents: str | None = None,
) -> int:
    try:
        where = Where.of(cwd, run_root)
        placement = _placement(on, ray_address, ray_resources)
        if max_attempts is not None and max_attempts < 1:
            raise Refusal(f"--max-attempts {max_attempts}: give 1 or more (leave it out for no limit)")
        if max_agents is not None:
            agent_limits.parse(max_agents, "--max-agents")
            # The attempts serve starts keep to it, unless one was queued with its own.
            os.environ[agent_limits.ENV] = max_agents
    except TargetError as problem:
        output.error(str(problem))
        return int(problem.problem.code)
    except Refusal as problem:
        output.error(str(problem))
        return int(Problem.REFUSED.code)
    from filelock import FileLock, Timeout

    where.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = FileLock(str(where.root / ".serve.lock"), timeout=0, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        output.error(f"another awf serve already serves {where.root}; one is enough")
        return 2
    try:
        return Serve(where.root, placement, max_attempts).run()
    finally:
        lock.release()


def _placement(on: str | None, address: str | None, resources: str | None) -> Placement | None:
    """`--on ray` with its address and resources, checked before serve starts."""
    if on is None:
        if address is not None or resources is not None:
            raise Refusal("--ray-address and --ray-resources go only with --on ray")
        return None
    if on != "ray":
        raise Refusal(f"--on {on}: awf serve places attempts on ray, or here when --on is left out")
    require_ray()
    return Placement(address, parse_resources(resources))


class Serve:
    """The loop: runs that changed or came due are looked at; the rest are left asleep."""

    def __init__(self, root: Path, placement: Placement | None = None, max_attempts: int | None = None) -> None:
        self.root = root
        self.placement = placement
        self.max_attempts = max_attempts
        self._queue_look = True  # the queue may hold an attempt serve can start now
        self._queue_due: float | None = None  # when an interrupted run's back-off ends
        self._reads: Reads = {}  # each run's last read by the queue, kept while its log is the same
        self._room = True  # the last read of the queue found room for another attempt
        self._no_room: set[tuple[str, str]] = set()  # ready runs whose wake waits for room
        self._started: dict[int, tuple[RunPaths, str]] = {}  # continue's pid -> its run and queued token
        self.log: _Log = _Log(root / "serve.log")
        self.wakeup: threading.Event = threading.Event()
        self.stopping: bool = False
        self._guard = threading.Lock()
        self._changed: dict[tuple[str, str], bool] = {}  # run -> a new event came (try it even if given up on)
        self._due: dict[tuple[str, str], float] = {}
        self._ending: dict[tuple[str, str], int] = {}  # run -> looks since its lock closed with the attempt alive
        self._told: dict[tuple[str, str], str] = {}  # the last thing said of a run that is not woken
        self._root_id = _identity(root)

    def changed(self, path: str, *, event: bool) -> None:
        parts = Path(path).relative_to(self.root).parts
        if len(parts) != 3 or is_temp_name(parts[1]):
            return  # not a run's file; or a run being made, whose folder is renamed into place
        if parts[2] == "run.jsonl":
            if self._room:  # a full queue waits for an attempt's lock to close, not for every line
                self._queue_look = True
                self.wakeup.set()
            return
        with self._guard:
            key = (parts[0], parts[1])
            self._changed[key] = self._changed.get(key, False) or event
            if not event:
                self._ending[key] = 0
                self._queue_look = True  # an attempt ended, or began: room may have come
        self.wakeup.set()

    def stop(self, _number: int, _frame: Any) -> None:
        self.stopping = True
        self.wakeup.set()

    def run(self) -> int:
        from watchdog.events import FileClosedEvent, FileCreatedEvent, FileMovedEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        serve = self

        class Changes(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                path = str(getattr(event, "dest_path", "") or event.src_path)
                name = os.path.basename(path)
                if name in WATCHED:
                    serve.changed(path, event=name == "events.jsonl")

        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self.stop)
        watcher = Observer()
        # Only writes: the opens and reads serve makes itself must not wake it.
        watcher.schedule(
            Changes(), str(self.root), recursive=True, event_filter=[FileClosedEvent, FileCreatedEvent, FileMovedEvent]
        )
        root = os.path.normpath(self.root)

        class Parent(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                paths = (str(getattr(event, "dest_path", "") or ""), str(event.src_path))
                if root in (os.path.normpath(path) for path in paths if path):
                    serve.wakeup.set()  # the root itself was removed, moved or made

        watcher.schedule(Parent(), str(self.root.parent), recursive=False)
        watcher.start()
        self.log.say(f"serving {self.root}" + (" (placing attempts on Ray)" if self.placement else ""))
        try:
            runs = wakes.every_run(self.root)
            for paths in runs:
                self._look_at(paths, event=False)
            self._start_queued()  # before it says it sleeps: from then on, it reads only what changes
            self.log.say(f"looked at {len(runs)} runs; asleep until an event comes, an attempt ends or a time is due")
            looked = time.monotonic()
            while not self.stopping:
                gone = self._root_gone()
                if gone is not None:
                    self.log.to_file = False  # serve.log went with the old root
                    self.log.say(gone)
                    return GONE
                if self.placement is not None and time.monotonic() - looked >= LOOK_EVERY_ON_RAY:
                    looked = time.monotonic()
                    self._queue_look = True  # an attempt that ends on another node raises no event here
                    with self._guard:
                        for paths in wakes.every_run(self.root):
                            self._changed.setdefault((paths.workflow, paths.id), False)
                self._look_at_ready()
                self._ended(_reap_children())
                self._look_at_queue()
                self.wakeup.wait(self._sleep())
                self.wakeup.clear()
        finally:
            watcher.stop()
            watcher.join(timeout=5)
            if self.log.to_file:
                self.log.say("stopped; parked runs stay parked until the next wake")
        return 0

    def _root_gone(self) -> str | None:
        """Why serve cannot go on serving its run root, when it was removed or replaced: its watch
        and its lock are on the folder that was, so it would wake nothing and let a second serve
        start beside it."""
        now = _identity(self.root)
        if now == self._root_id:
            return None
        what = "was removed" if now is None else "was removed and made again"
        return (
            f"the run root {self.root} {what}, so this serve watches nothing there and holds no lock on it; "
            "stopping: start awf serve again to serve the runs there now"
        )

    def _sleep(self) -> float:
        with self._guard:
            if self._changed or self._queue_look:
                return 0
            soonest = min([*self._due.values(), *([self._queue_due] if self._queue_due else [])], default=None)
        longest = ROOT_CHECK_EVERY if self.placement is None else min(ROOT_CHECK_EVERY, LOOK_EVERY_ON_RAY)
        if soonest is None:
            return longest
        return min(longest, max(0.0, soonest - time.time()))

    def _look_at_ready(self) -> None:
        now = time.time()
        with self._guard:
            changed, self._changed = self._changed, {}
            for key, due in list(self._due.items()):
                if due <= now:
                    del self._due[key]
                    changed.setdefault(key, False)
        for (workflow, run_id), event in sorted(changed.items()):
            if self.stopping:
                return
            self._look_at(RunPaths(self.root, workflow, run_id), event)

    def _look_at_queue(self) -> None:
        """The queue, read only when something may have made room or queued an attempt, or a
        back-off ends: a serve with nothing changing reads nothing."""
        if self._queue_look or (self._queue_due is not None and time.time() >= self._queue_due):
            self._start_queued()

    def _start_queued(self) -> None:
        """Start what waits in the queue, in its order, while there is room; a ready run whose wake
        waited for room goes first."""
        self._queue_look = False
        try:
            waiting = queue.read(self.root, self._reads)
            if self._queue_interrupted(waiting.interrupted):
                waiting = queue.read(self.root, self._reads)
        except RecordError as problem:
            self.log.say(f"cannot read the queue: {problem}")
            return
        room = len(waiting.waiting) if self.max_attempts is None else self.max_attempts - len(waiting.alive)
        self._room = room > 0
        if self._no_room and room > 0:
            with self._guard:
                for key in self._no_room:
                    self._changed.setdefault(key, False)
            room -= len(self._no_room)
            self._no_room.clear()
        for one in waiting.waiting:
            if self.stopping or room <= 0:
                return
            try:
                started = queue.start(one, self.placement)
            except RecordError as problem:
                self.log.say(f"cannot start {one.paths.name} from the queue: {problem}")
                continue
            if started is None:
                continue
            room -= 1
            self._started[started.pid] = (one.paths, one.token)
            self.log.say(
                f"started {one.paths.name} from the queue: attempt {started.attempt} (pid {started.pid}, "
                f"priority {one.priority})"
            )

    def _queue_interrupted(self, interrupted: list[Interrupted]) -> bool:
        """Queue once the continue of each run whose attempt serve started was interrupted (a
        crash, a reboot), backing off as wakes do, and giving up after as many in a row; whether
        it queued any."""
        now = time.time()
        self._queue_due = None
        queued = False
        for one in interrupted:
            name = one.paths.name
            if one.in_a_row >= GIVE_UP_AFTER:
                why = (
                    f"gave up on {name}: {one.in_a_row} interrupted attempts in a row; queue its continue again "
                    f"with awf run FILE --id {one.paths.id} --continue --queue"
                )
                if self._told.get((one.paths.workflow, one.paths.id)) != why:
                    self._told[(one.paths.workflow, one.paths.id)] = why
                    self.log.say(why)
                continue
            not_before = parse_iso(one.started) + wakes.backoff(one.in_a_row)
            if now < not_before:
                self._queue_due = min(self._queue_due or not_before, not_before)
                continue
            if queue.queue_again(one) is not None:
                queued = True
                self.log.say(f"queued {name} again: attempt {one.attempt}, which it started, was interrupted")
        return queued

    def _has_room(self) -> bool:
        """Whether another attempt may start now under --max-attempts."""
        if self.max_attempts is None:
            return True
        return len(queue.read(self.root, self._reads).alive) < self.max_attempts

    def _ended(self, ended: list[tuple[int, int]]) -> None:
        """A continue serve started from the queue that exited before its attempt began gives up
        its place, saying why, rather than be started again and again."""
        for pid, code in ended:
            started = self._started.pop(pid, None)
            if started is None:
                continue
            self._queue_look = True
            paths, token = started
            reason = f"awf run exited {code} before the attempt began; its words are in {paths.dir / 'wake.log'}"
            try:
                if queue.withdraw_if_waiting(paths, token, reason):
                    self.log.say(f"withdrew {paths.name} from the queue: {reason}")
            except RecordError as problem:
                self.log.say(f"cannot withdraw {paths.name} from the queue: {problem}")

    def _look_at(self, paths: RunPaths, event: bool) -> None:
        key = (paths.workflow, paths.id)
        try:
            woken = wakes.wake(
                paths, force=event, placement=self.placement, room=None if self.max_attempts is None else self._has_room
            )
        except RecordError as problem:
            # One run's damaged record is that run's problem: serve goes on serving the others.
            if self._told.get(key) != str(problem):
                self._told[key] = str(problem)
                self.log.say(f"cannot wake {paths.name}: {problem}")
            return
        if isinstance(woken, wakes.Woken):
            self._due.pop(key, None)
            self._told.pop(key, None)
            again = " (a new event: trying a crash-looping run again)" if woken.forced else ""
            self.log.say(f"woke {paths.name}: {woken.said()}{again}")
            return
        with self._guard:
            ending = self._ending.pop(key, None)
        if woken.state == "busy" and ending is not None and ending < ENDING_LOOKS:
            # The lock closes as the process exits, a moment before it is seen gone: look again soon.
            with self._guard:
                self._ending[key] = ending + 1
            self._due[key] = time.time() + 0.05 * (ending + 1)
        elif woken.state == "no-room":
            self._no_room.add(key)  # woken once an attempt ends and the queue has room
            self._due.pop(key, None)
        elif woken.again is not None:
            self._due[key] = woken.again
        else:
            self._due.pop(key, None)
        if woken.state in ("crash-looping", "held-back") and self._told.get(key) != woken.why:
            self._told[key] = woken.why  # once each, not at every look
            self.log.say(f"gave up on {paths.name}, {woken.why}" if woken.state == "crash-looping" else woken.why)


def _identity(root: Path) -> tuple[int, int] | None:
    """The run root's device and inode, or None when it is gone."""
    try:
        stat = os.stat(root)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


def _reap_children() -> list[tuple[int, int]]:
    """Collect the continues serve started that have ended, so none lingers as a zombie: each
    one's pid and exit code."""
    ended: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended.append((pid, os.waitstatus_to_exitcode(status)))


class _Log:
    """What serve did, on stderr and appended to serve.log in the run root."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.to_file = True

    def say(self, text: str) -> None:
        line = f"{datetime.now().astimezone().isoformat(timespec='seconds')} {text}"
        output.error_line(line)
        if self.to_file:
            append_line(self.path, {"at": line[:25], "text": text}, sync=False)
