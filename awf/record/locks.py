"""The record's lock files, taken with filelock; a lock file that cannot be opened (a folder
where it goes, a file awf may not open) is a RecordError naming it, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import RecordError
from .log import unreadable

if TYPE_CHECKING:
    from filelock import BaseFileLock


def take(lock: BaseFileLock, path: Path) -> None:
    """Acquire `lock` (the lock file at `path`); filelock's Timeout passes through."""
    from filelock import Timeout

    try:
        lock.acquire()
    except Timeout:
        raise
    except OSError as error:  # Timeout is an OSError too, so it is let through above
        problem = unreadable(error).replace("cannot be read", "cannot be locked", 1)
        raise RecordError(path, problem, "remove it: awf makes it again as it needs it") from None


@contextmanager
def holding(path: Path) -> Iterator[None]:
    """Hold the lock file at `path`, waiting for whoever holds it now."""
    from filelock import FileLock

    lock = FileLock(str(path), mode=0o600)
    take(lock, path)
    try:
        yield
    finally:
        lock.release()
