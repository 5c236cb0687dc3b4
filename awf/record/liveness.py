"""Whether an attempt's process is alive: its pid and the start time the kernel gave it.

A pid alone is not enough: after a reboot another process may carry it.
"""

from __future__ import annotations

import os


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


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip()
    except OSError:
        return "unknown-boot"


def is_alive(pid: int, start: str | None) -> bool:
    """True when `pid` runs and, where the start time is known, is the same process."""
    if pid <= 0:
        return False
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
