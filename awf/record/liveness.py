"""Whether an attempt's process is alive: its pid and the start time the kernel gave it.

A pid alone is not enough: after a reboot another process may carry it. And a pid means
nothing on another machine: an attempt placed on another node of a cluster is alive while it
holds its run's attempt lock, which every node sees on the shared storage.
"""

from __future__ import annotations

import os
from pathlib import Path


def process_start(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot, with the boot id), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        ticks = fields[19].decode()
    except IndexError:
        return None
    return f"{_boot_id()}:{ticks}"


def this_boot() -> str:
    """The boot id of this machine: a process start time from another boot is another machine's."""
    return _boot_id()


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip()
    except OSError:
        return "unknown-boot"


def is_alive(pid: int, start: str | None, lock: Path | str | None = None) -> bool:
    """True when `pid` runs and, where the start time is known, is the same process.

    A start time from another boot is another machine's process (or one from before a reboot):
    then `lock`, the attempt lock it held, answers instead.
    """
    if pid <= 0:
        return False
    if start is not None and lock is not None and not start.startswith(_boot_id() + ":"):
        return lock_is_held(lock)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    if _is_zombie(pid):
        return False  # it has exited; its parent has not collected it yet
    if start is None:
        return True
    now = process_start(pid)
    return now is None or now == start


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] in (b"Z", b"X")


def lock_is_held(lock: Path | str) -> bool:
    """True when some process holds the attempt lock `lock`, on this machine or another.

    Found by trying to take it, and letting go at once; a filesystem whose locks do not reach
    across machines answers for this machine only (docs/cluster.md lists the ones that do).
    """
    from filelock import FileLock, Timeout

    probe = FileLock(str(lock), timeout=0, mode=0o600)
    try:
        probe.acquire()
    except Timeout:
        return True
    except OSError:
        return False  # no lock file (or none can be made): nothing holds it
    probe.release()
    return False
