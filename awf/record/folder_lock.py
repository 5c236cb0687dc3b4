"""The lock on the folder an attempt works in, so no two runs work in one folder unawares.

An attempt holds the lock file of its folder while it runs (a `filelock`, so a crash lets go of
it), and writes beside it who holds it: the refusal of a second run names that run and its pid.
A run's own continues are kept apart by the run's attempt lock, not by this one.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .clock import now_iso
from .errors import RecordError
from .files import ensure_dir, read_bytes, write_atomic, write_json
from .liveness import process_start

if TYPE_CHECKING:
    from filelock import BaseFileLock

FOLDER_LOCK = Path(".awf") / "folder.lock"


def checkout_of(cwd: Path) -> Path:
    """The folder a run in `cwd` shares with others: the git checkout holding it, else `cwd` itself."""
    for folder in (cwd, *cwd.parents):
        if is_checkout(folder):
            return folder
    return cwd


def is_checkout(folder: Path) -> bool:
    """Whether `folder` is the top of a git checkout: its `.git` a folder with a HEAD, or a file
    naming one (a worktree's). An empty `.git` is not one: a sandbox that hides `.git` folders
    makes one where it mounts over it (codex's, while its command runs), even in /tmp."""
    git = folder / ".git"
    try:
        if git.is_symlink():
            return False  # where an agent may write, a link is never followed
        if git.is_dir():
            return os.path.lexists(git / "HEAD")
        if git.is_file():
            descriptor = os.open(git, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                return os.read(descriptor, 8) == b"gitdir: "
            finally:
                os.close(descriptor)
    except OSError:
        return False
    return False


def in_run_root(root: Path, folder: Path) -> Path:
    """The lock of `folder` kept in a run root outside it: named for the folder's path."""
    import hashlib

    key = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return root / ".folders" / f"{folder.name}-{key}.lock"


@dataclass
class Holder:
    """Who holds a folder: a run's attempt, its process and where it runs."""

    run: str
    attempt: int
    pid: int
    host: str
    folder: str


class FolderTaken(Exception):
    def __init__(self, folder: Path, holder: Holder | None) -> None:
        super().__init__(str(folder))
        self.folder = folder
        self.holder = holder


class FolderLock:
    """A folder's lock, held: give it back with `release` (a crash gives it back too)."""

    def __init__(self, lock: BaseFileLock, path: Path) -> None:
        self._lock = lock
        self.path = path

    def release(self) -> None:
        try:
            os.unlink(_holder_path(self.path))
        except OSError:
            pass  # the next holder writes its own; a stale one is never read while the lock is free
        self._lock.release()


def take(lock_path: Path, folder: Path, *, run: str, attempt: int) -> FolderLock:
    """Hold the lock of `folder` at `lock_path` for `run`'s attempt; FolderTaken when another holds it."""
    from filelock import FileLock, Timeout

    parent = lock_path.parent
    ensure_dir(parent)
    if parent.name == ".awf" and not os.path.lexists(parent / ".gitignore"):
        write_atomic(parent / ".gitignore", "*\n")  # the folder's own .awf stays out of git status
    for path in (parent, lock_path):
        if path.is_symlink():
            raise RecordError(path, "is a symbolic link, where awf keeps a folder's lock", "remove the link")
    lock = FileLock(str(lock_path), mode=0o600, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise FolderTaken(folder, read_holder(lock_path)) from None
    except OSError as error:
        raise RecordError(lock_path, f"cannot be locked ({error.strerror})", "remove it: awf makes it again") from None
    pid = os.getpid()
    write_json(
        _holder_path(lock_path),
        {
            "run": run,
            "attempt": attempt,
            "pid": pid,
            "process_start": process_start(pid),
            "host": socket.gethostname(),
            "folder": str(folder),
            "at": now_iso(),
        },
    )
    return FolderLock(lock, lock_path)


def read_holder(lock_path: Path) -> Holder | None:
    """Who holds the lock, as it wrote; None when it has not written yet or it cannot be read."""
    import json

    try:
        data: Any = json.loads(read_bytes(_holder_path(lock_path)))
        return Holder(str(data["run"]), int(data["attempt"]), int(data["pid"]), str(data["host"]), str(data["folder"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _holder_path(lock_path: Path) -> Path:
    return lock_path.with_name(lock_path.name.removesuffix(".lock") + ".holder.json")
