"""What a sandboxed agent may use: its limits, as a profile sets them, and the watch that ends an
agent past one.

    {"write": ["."], "limits": {"processes": 512, "cpu_seconds": 3600, "tmp_mib": 256}}

- processes: processes and threads at once in the sandbox. The kernel refuses a fork past it
  (RLIMIT_NPROC, counted in the sandbox's own user namespace); it does not hold root to it, so awf
  also counts, and ends a sandbox that reached it.
- open_files: open files per process (RLIMIT_NOFILE); a program past it gets EMFILE.
- cpu_seconds: CPU time of every process the sandbox ever ran, summed; none by default.
- tmp_mib, shm_mib: the size of /tmp and /dev/shm, memory the sandbox's own (a tmpfs each).

The watch reads /proc from outside the sandbox, at most every WATCH_EVERY seconds: the processes
below each program it started that are in the sandbox's pid namespace, their CPU time, and whether
its /tmp or /dev/shm is full. What it finds past a limit ends the turn failed, naming the limit.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

from ...record.liveness import process_start
from ..reaper import descendants

WATCH_EVERY = 0.5
MIB = 2**20
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Limits:
    """A sandbox's limits; None: none of that kind."""

    processes: int | None = 2048
    open_files: int | None = 8192
    cpu_seconds: float | None = None
    tmp_mib: int | None = 1024
    shm_mib: int | None = 256

    def as_record(self) -> dict[str, float | None]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def within(self, other: Limits) -> Limits:
        """These limits, none looser than `other`'s: an agent never gets more than its run allows."""
        values = {}
        for field in fields(self):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            values[field.name] = theirs if mine is None else mine if theirs is None else min(mine, theirs)
        return Limits(**values)


DEFAULTS = Limits()
NAMES = tuple(field.name for field in fields(Limits))
_WORDS = {
    "processes": "a whole number of processes and threads at once",
    "open_files": "a whole number of open files per process",
    "cpu_seconds": "CPU seconds, a number",
    "tmp_mib": "the MiB of /tmp, a whole number",
    "shm_mib": "the MiB of /dev/shm, a whole number",
}


def parse(given: Any, problems: list[str]) -> Limits:
    """A profile's `limits` (a JSON object; absent: the defaults); what is wrong goes to `problems`."""
    if given is None:
        return DEFAULTS
    if not isinstance(given, Mapping):
        problems.append(f"limits is an object of {', '.join(NAMES)}, not {given!r}")
        return DEFAULTS
    values: dict[str, Any] = {}
    for key, value in given.items():
        if key not in NAMES:
            problems.append(f"limits: {key!r} is not a limit: there are {', '.join(NAMES)}")
            continue
        whole = key != "cpu_seconds"
        fits = value is None or (
            not isinstance(value, bool)
            and isinstance(value, int if whole else (int, float))
            and value > 0
            and (key != "processes" or value >= MIN_PROCESSES)
        )
        if not fits:
            least = f" (at least {MIN_PROCESSES})" if key == "processes" else ""
            problems.append(f"limits: {key} is {_WORDS[key]} above zero{least}, or null for none; not {value!r}")
            continue
        values[key] = value
    return Limits(**{**DEFAULTS.as_record(), **values})


MIN_PROCESSES = 16  # awf's own helper, the agent's program and its threads need a few


def from_record(record: Any) -> Limits:
    """The limits a run line recorded; the defaults for a run recorded before limits were."""
    if not isinstance(record, Mapping):
        return DEFAULTS
    return Limits(**{**DEFAULTS.as_record(), **{key: record[key] for key in NAMES if key in record}})


def init_options(limits: Limits) -> list[str]:
    """The options that give the sandbox's first process (init.py) the kernel's limits."""
    options = []
    if limits.processes is not None:
        options += ["--nproc", str(limits.processes)]
    if limits.open_files is not None:
        options += ["--nofile", str(limits.open_files)]
    return options


class Watch:
    """The programs started in one agent's sandbox, and what they use, read from /proc."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._roots: list[tuple[int, str | None]] = []  # pid, and its start time: a pid is reused
        self._next = 0.0
        self._own_pidns = _pidns(os.getpid())

    def started(self, pid: int) -> None:
        """A program whose sandbox this is (its launcher's pid: bubblewrap, once exec'd; or the
        shell of the pane it runs in)."""
        self._roots.append((pid, process_start(pid)))

    def breach(self, now: float | None = None) -> str | None:
        """Which limit the sandbox has passed, said for the turn's reason; None while it is within
        them. Looks at most every WATCH_EVERY seconds."""
        now = time.monotonic() if now is None else now
        if now < self._next:
            return None
        self._next = now + WATCH_EVERY
        inside = list(self._inside())
        if not inside:
            return None
        limits = self.limits
        # The kernel counts threads as it counts processes, and refuses the one that would pass the
        # limit: a sandbox at its limit is one whose next fork fails.
        tasks = sum(_tasks(pid) for pid in inside) if limits.processes is not None else 0
        if limits.processes is not None and tasks >= limits.processes:
            return (
                f"it reached its sandbox's limit of {limits.processes} processes and threads (limits.processes), "
                f"with {len(inside)} processes running"
            )
        if limits.cpu_seconds is not None:
            used = sum(_cpu_seconds(pid) for pid in inside)
            if used > limits.cpu_seconds:
                return (
                    f"it used {used:.0f} CPU seconds, past its sandbox's limit of {limits.cpu_seconds:g} "
                    "(limits.cpu_seconds)"
                )
        for folder, size, name in (("tmp", limits.tmp_mib, "tmp_mib"), ("dev/shm", limits.shm_mib, "shm_mib")):
            if size is not None and _full(inside, folder):
                return f"it filled /{folder} in its sandbox, {size} MiB (limits.{name})"
        return None

    def end(self) -> None:
        """End every program started in this sandbox that still runs, and so the sandbox: bubblewrap
        takes its pid namespace, and everything in it, with it."""
        for pid, _ in self._alive():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def _alive(self) -> list[tuple[int, str | None]]:
        self._roots = [(pid, start) for pid, start in self._roots if start is not None and process_start(pid) == start]
        return self._roots

    def _inside(self) -> Iterator[int]:
        """The processes in the sandbox: below a program it started, in a pid namespace not awf's."""
        for root, _ in self._alive():
            for pid in descendants(root):
                if _pidns(pid) != self._own_pidns:
                    yield pid


def _tasks(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _pidns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _cpu_seconds(pid: int) -> float:
    """The CPU time of a process and of the children it has reaped: summed over every live process
    of a tree, each process that ever ran in it counts once."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return 0.0
    fields_after_name = stat[stat.rfind(b")") + 2 :].split()
    try:
        return sum(int(value) for value in fields_after_name[11:15]) / _TICKS
    except (ValueError, IndexError):
        return 0.0


def _full(inside: list[int], folder: str) -> bool:
    for pid in inside:
        try:
            stats = os.statvfs(f"/proc/{pid}/root/{folder}")
        except OSError:
            continue
        return stats.f_blocks > 0 and stats.f_bavail == 0
    return False
