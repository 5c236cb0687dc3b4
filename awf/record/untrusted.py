"""Folders another program can write: every path below one is opened a folder at a time, never
through a link.

An agent writes its own folder in the run's record (its answers, its home, its sessions) while awf
reads and writes files there too. Between two of awf's opens the agent can put a symbolic link
where a file or a folder was, to send awf's write (as awf's user, maybe root) to a file outside, or
to have awf read another file as its answer; or a FIFO, on which a read would wait forever. So awf
says which folders are untrusted (`untrusted`), and each open of a path below one (`open_fd`,
`open_parent`) starts from the folder and opens each folder on the way with O_NOFOLLOW, then the
file itself with O_NOFOLLOW and checks it is a regular file: a link or a FIFO is refused with an
error that says so, never followed. Paths outside every untrusted folder are opened as usual, the
last step never through a link (record/files.py's NO_FOLLOW).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Folders whose contents another program may change, as absolute paths ending in a separator.
_ROOTS: set[str] = set()


class Refused(OSError):
    """A path awf will not open: a link, a FIFO or a device where a file or a folder should be."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def untrusted(folder: Path | str) -> None:
    """From now on, open what is below `folder` without following any link in it (the folder's own
    path, which only awf's user chose, is followed as usual)."""
    _ROOTS.add(os.path.join(os.path.abspath(folder), ""))


def root_of(path: Path | str) -> str | None:
    """The untrusted folder `path` lies below, or None."""
    if not _ROOTS:
        return None
    text = os.path.abspath(path)
    for root in _ROOTS:
        if text.startswith(root):
            return root
    return None


def open_fd(path: Path | str, flags: int, mode: int = 0o600) -> int:
    """os.open(path, flags, mode), the last step never through a link; below an untrusted folder,
    no step through a link, and only a regular file (or a folder, with O_DIRECTORY) is opened."""
    root = root_of(path)
    if root is None:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    parent, name = _walk_to_parent(root, os.path.abspath(path))
    try:
        return _open_checked(parent, name, flags, mode, path)
    finally:
        os.close(parent)


def open_parent(path: Path | str) -> tuple[int, str]:
    """A descriptor of the folder that holds `path`, and `path`'s name in it: for creating, renaming
    and linking by name in that folder (os.replace(..., src_dir_fd=fd, dst_dir_fd=fd)). The caller
    closes the descriptor."""
    text = os.path.abspath(path)
    root = root_of(text)
    if root is None:
        head, name = os.path.split(text)
        return os.open(head, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), name
    return _walk_to_parent(root, text)


def make_dir(path: Path | str, mode: int) -> None:
    """os.mkdir(path, mode); below an untrusted folder, in a parent reached without following links.
    FileExistsError when it is there."""
    if root_of(path) is None:
        os.mkdir(path, mode)
        return
    parent, name = open_parent(path)
    try:
        os.mkdir(name, mode, dir_fd=parent)
    finally:
        os.close(parent)


def is_dir(path: Path | str) -> bool:
    """Whether `path` is a folder; below an untrusted folder, reached without following a link."""
    if root_of(path) is None:
        return os.path.isdir(path)
    try:
        fd = open_fd(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    os.close(fd)
    return True


def _walk_to_parent(root: str, path: str) -> tuple[int, str]:
    parts = path[len(root) :].split(os.sep)
    if any(part in ("", ".", "..") for part in parts):
        raise Refused(errno.EINVAL, "not a plain path below its folder", path)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = root.rstrip(os.sep)
    try:
        for part in parts[:-1]:
            where = os.path.join(where, part)
            child = _open_checked(fd, part, _DIR_FLAGS, 0, where)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _open_checked(parent: int, name: str, flags: int, mode: int, shown: Path | str) -> int:
    reading = flags & (os.O_WRONLY | os.O_RDWR) == 0
    # O_NONBLOCK: opening a FIFO to read it would otherwise wait for a writer forever.
    extra = os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_NONBLOCK if reading else 0)
    try:
        fd = os.open(name, flags | extra, mode, dir_fd=parent)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            kind = _kind(parent, name)
            if kind is not None:
                raise Refused(error.errno, f"it is {kind}, which awf does not follow", os.fspath(shown)) from None
        raise
    kind = _kind_of(os.fstat(fd).st_mode, flags & os.O_DIRECTORY != 0)
    if kind is not None:
        os.close(fd)
        raise Refused(errno.EINVAL, f"it is {kind}, where awf reads and writes only files", os.fspath(shown))
    if reading:
        os.set_blocking(fd, True)
    return fd


def _kind(parent: int, name: str) -> str | None:
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return _kind_of(mode, directory=False) if not stat.S_ISDIR(mode) else None


def _kind_of(mode: int, directory: bool) -> str | None:
    if stat.S_ISREG(mode):
        return None if not directory else "a file"
    if stat.S_ISDIR(mode):
        return None if directory else "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"
