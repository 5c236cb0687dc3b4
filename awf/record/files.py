"""Durable writes: whole files through a temp file, fsync and rename; appends fsynced.

A crash at any point leaves the old file or the new one, never a mix.
"""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from . import untrusted
from .errors import RecordWriteError

FILE_MODE = 0o600
DIR_MODE = 0o700
READ_SIZE = 65536  # a stage's record is a few hundred bytes; asking for much more costs an allocation


# A temp file is named `{name}~{pid}.awf-tmp`: "~" is in no stage name, id or workflow name, and no
# record ends so, so a reader passes over it by its name alone and the next attempt can remove it.
TEMP_SUFFIX = ".awf-tmp"
_TEMP_NAME = re.compile(r".+~\d+\.awf-tmp")
# A record's files are never opened through a symbolic link: one planted in a run's folder would
# send awf's writes, or its reads, anywhere. Below a folder an agent writes, no folder on the way is
# either (untrusted.py): every open here goes through untrusted.open_fd.
NO_FOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def temp_name(name: str) -> str:
    """The name of the temp file a write of `name` goes through."""
    return f"{name}~{os.getpid()}{TEMP_SUFFIX}"


def is_temp_name(name: str) -> bool:
    """Whether `name` is a temp file of an atomic write, and never a record's name."""
    return _TEMP_NAME.fullmatch(name) is not None


def write_failed(path: Path | str, error: OSError) -> RecordWriteError:
    """The error a failed write of `path` ends the attempt with."""
    return RecordWriteError(path, error)


# json.dumps makes an encoder at each call when given options; awf writes a line at every stage.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def dumps(obj: Any) -> str:
    """JSON as awf writes it: UTF-8 text, keys in the order given, no NaN."""
    return _ENCODER.encode(obj)


def ensure_dir(path: Path) -> None:
    """Create `path` and its missing parents, each with mode 0700 (mkdir's `parents` would give
    the parents the default mode), and fsync the parent of each folder made."""
    missing = []
    while not untrusted.is_dir(path):
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        try:
            untrusted.make_dir(folder, DIR_MODE)
        except FileExistsError:
            if not untrusted.is_dir(folder):
                raise write_failed(folder, NotADirectoryError(errno.ENOTDIR, "it is a file, not a folder")) from None
        except OSError as error:
            raise write_failed(folder, error) from None
    # A folder made is an entry in its parent: without the parent's fsync a power cut may lose
    # the folder, and with it a run whose lines were on the disk.
    for folder in missing:
        fsync_dir(folder.parent)


def fsync_dir(path: Path) -> None:
    """Make renames, creations and unlinks in `path` durable."""
    try:
        fd = untrusted.open_fd(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        raise write_failed(path, error) from None


def write_atomic(path: Path, text: str | bytes, *, sync_dir: bool = False) -> None:
    """Replace `path` with `text`: temp file beside it, fsync, rename.

    `sync_dir` also makes the rename durable before returning, for a file a line of the log is
    about to name. A write that fails removes its temp file and raises RecordWriteError.
    """
    # Below an agent's folder, by name in its parent held open: a link put in place of a folder on
    # the way is never followed. Elsewhere by path, as the fault suite counts the record's writes.
    guarded = untrusted.root_of(path) is not None
    try:
        folder, name = untrusted.open_parent(path) if guarded else (None, os.fspath(path))
    except OSError as error:
        raise write_failed(path, error) from None
    tmp = temp_name(name) if guarded else os.fspath(path.with_name(temp_name(path.name)))
    try:
        try:
            # O_EXCL: a file or a link already at the temp name is never written through.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW, FILE_MODE, dir_fd=folder)
        except FileExistsError:
            _remove(tmp, folder)  # a leftover of this same pid, before a reboot: its content never counted
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW, FILE_MODE, dir_fd=folder)
            except OSError as error:
                raise write_failed(path, error) from None
        except OSError as error:
            raise write_failed(path, error) from None
        try:
            try:
                _write_all(fd, text.encode() if isinstance(text, str) else text)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except OSError as error:
            _remove(tmp, folder)
            raise write_failed(path, error) from None
    finally:
        if folder is not None:
            os.close(folder)
    if sync_dir:
        fsync_dir(path.parent)


def _remove(path: Path | str, folder: int | None = None) -> None:
    try:
        os.unlink(path, dir_fd=folder)
    except OSError:
        pass  # a temp file left behind is removed by the next attempt


def remove_temp_files(folder: Path) -> list[str]:
    """Remove what writes that never finished left in `folder`; the names removed."""
    try:
        names = [name for name in os.listdir(folder) if is_temp_name(name)]
    except OSError:
        return []
    for name in names:
        _remove(folder / name)
    return names


def write_json(path: Path, obj: Any, *, sync_dir: bool = False) -> None:
    """Write `obj` as indented JSON, atomically, so a person can read and edit it."""
    write_atomic(path, json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=2) + "\n", sync_dir=sync_dir)


def write_json_lines(path: Path, obj: dict[str, Any], *, sync_dir: bool = False) -> str:
    """Write a dict a key a line, and a list a item a line, each compact, atomically.

    For files that grow with the run (out.json lists every stage): as easy to read as indented
    JSON, and written by the C encoder, where indenting falls back to a slower one.
    """
    text = json_lines_text(obj)
    write_atomic(path, text + "\n", sync_dir=sync_dir)
    return text


def json_lines_text(obj: Mapping[str, object]) -> str:
    """A dict as write_json_lines writes it (no newline at the end): a key a line, a list an item
    a line, each compact."""
    parts = []
    for key, value in obj.items():
        if isinstance(value, list) and value:
            items = ",\n".join(f"    {dumps(item)}" for item in value)
            parts.append(f"  {dumps(key)}: [\n{items}\n  ]")
        else:
            parts.append(f"  {dumps(key)}: {dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}"


def read_bytes(path: str | Path) -> bytes:
    """The whole of a file, read with the fewest calls: a continue reads every stage's record.

    Errors are those of open(): FileNotFoundError, or an OSError naming the file.
    """
    fd = untrusted.open_fd(path, os.O_RDONLY)
    try:
        chunks: list[bytes] = []
        while True:
            try:
                chunk = os.read(fd, READ_SIZE)
            except OSError as error:  # a folder opens, and fails here; say which, as open() would
                raise OSError(error.errno, error.strerror, os.fspath(path)) from None
            if not chunk:
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def open_read(path: Path | str) -> BinaryIO:
    """`path` open for reading in binary, never through a link (below an agent's folder, no folder
    on the way either); a link, FIFO or device there raises untrusted.Refused, an OSError."""
    return os.fdopen(untrusted.open_fd(path, os.O_RDONLY), "rb")


def file_size(path: Path | str) -> int:
    """The size of the file at `path`, reached as open_read reaches it."""
    fd = untrusted.open_fd(path, os.O_RDONLY)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def is_file(path: Path | str) -> bool:
    """Whether a file is at `path`, reached as open_read reaches it (a link there is no file)."""
    try:
        file_size(path)
    except OSError:
        return False
    return True


def append_line(path: Path, obj: Any, *, sync: bool = True) -> int:
    """Append `obj` as one JSON line; return the offset the line starts at.

    `sync=False` is for lines that only report progress: losing one in a crash loses nothing a
    continue needs. A write that fails part-way is cut back off, and raises RecordWriteError.
    """
    data = (dumps(obj) + "\n").encode()
    try:
        fd = untrusted.open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    except OSError as error:
        raise write_failed(path, error) from None
    try:
        offset = os.lseek(fd, 0, os.SEEK_END)
        _append(fd, path, data, sync)
        return offset
    finally:
        os.close(fd)


# Logs whose last append failed and could not be cut back: their next line starts on a fresh line.
_RAGGED: set[str] = set()


def _append(fd: int, path: Path | str, data: bytes, sync: bool) -> None:
    """Write one line at the end of a log open for appending, leaving the log as it was if that fails.

    A half-written line would be glued to the next one, and both lost to every reader; it is cut
    off again, or, when the cut fails too, the next append to the file starts a line of its own.
    """
    key = os.fspath(path)
    if key in _RAGGED:
        size = os.fstat(fd).st_size
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
    written = 0
    try:
        view = memoryview(data)
        while view:
            count = os.write(fd, view)
            written += count
            view = view[count:]
        if sync:
            os.fsync(fd)
    except OSError as error:
        try:
            if written:
                os.ftruncate(fd, os.fstat(fd).st_size - written)
            _RAGGED.discard(key)
        except OSError:
            _RAGGED.add(key)
        raise write_failed(path, error) from None
    _RAGGED.discard(key)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class ProgressLines:
    """Appends lines that only report progress (not fsynced, as append_line's `sync=False`) to one
    file, through a descriptor kept open until `close`: a continue writes one for each of
    thousands of reused stages, and opening the file for each costs more than writing the line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def append(self, obj: Any) -> None:
        data = (dumps(obj) + "\n").encode()
        if self._fd is None:
            try:
                self._fd = untrusted.open_fd(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
            except OSError as error:
                raise write_failed(self.path, error) from None
        _append(self._fd, self.path, data, sync=False)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
