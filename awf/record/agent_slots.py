"""Slots for agents of a runtime across every run of a run root: lock files, so a crash frees its slot.

`--max-agents claude=2` makes two slots for claude turns, `.slots/claude.0.lock` and
`.slots/claude.1.lock` in the run root. A turn holds one (a `filelock`, let go when its process
dies however it dies) and writes beside it which run and agent hold it, so a turn that waits can
say whom it waits on.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .files import ensure_dir, read_bytes, write_json
from .liveness import lock_is_held

if TYPE_CHECKING:
    from filelock import BaseFileLock

SLOTS = ".slots"  # in the run root


@dataclass
class Slot:
    """A slot, held: give it back with `release` (a crash gives it back too)."""

    lock: BaseFileLock
    path: Path

    def release(self) -> None:
        try:
            os.unlink(_holder_path(self.path))
        except OSError:
            pass  # a stale one is never read while its lock is free
        self.lock.release()


def slot_path(root: Path, runtime: str, number: int) -> Path:
    return root / SLOTS / f"{runtime}.{number}.lock"


def try_take(root: Path, runtime: str, limit: int, *, run: str, agent: str) -> Slot | None:
    """A free slot of `runtime`'s `limit`, taken for `run`'s `agent`; None when all are held."""
    from filelock import FileLock, Timeout

    ensure_dir(root / SLOTS)
    for number in range(limit):
        path = slot_path(root, runtime, number)
        lock = FileLock(str(path), mode=0o600, timeout=0)
        try:
            lock.acquire()
        except Timeout:
            continue
        write_json(_holder_path(path), {"run": run, "agent": agent, "pid": os.getpid()})
        return Slot(lock, path)
    return None


def holders(root: Path, runtime: str, limit: int) -> list[str]:
    """Who holds `runtime`'s slots, each as `fix/12 builder` (`?` where it has not said yet)."""
    found = []
    for number in range(limit):
        path = slot_path(root, runtime, number)
        if not path.exists() or not lock_is_held(path):
            continue
        try:
            holder = json.loads(read_bytes(_holder_path(path)))
            found.append(f"{holder['run']} {holder['agent']}")
        except (OSError, ValueError, KeyError, TypeError):
            found.append("?")
    return found


def waiting_text(runtime: str, held_by: list[str]) -> str:
    """`waiting for a claude slot (2 in use: fix/12 builder, fix/13 reviewer)`."""
    article = "an" if runtime[:1] in "aeiou" else "a"
    return f"waiting for {article} {runtime} slot ({len(held_by)} in use: {', '.join(held_by)})"


def _holder_path(lock: Path) -> Path:
    return lock.with_suffix(".json")
