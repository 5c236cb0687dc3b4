"""Durable writes: whole files through a temp file, fsync and rename; appends fsynced.

A crash at any point leaves the old file or the new one, never a mix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FILE_MODE = 0o600
DIR_MODE = 0o700
READ_SIZE = 65536  # a stage's record is a few hundred bytes; asking for much more costs an allocation


# json.dumps makes an encoder at each call when given options; awf writes a line at every stage.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def dumps(obj: Any) -> str:
    """JSON as awf writes it: UTF-8 text, keys in the order given, no NaN."""
    return _ENCODER.encode(obj)


def ensure_dir(path: Path) -> None:
    """Create `path` and its missing parents, each with mode 0700 (mkdir's `parents` would give
    the parents the default mode)."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass


def fsync_dir(path: Path) -> None:
    """Make renames, creations and unlinks in `path` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str | bytes) -> None:
    """Replace `path` with `text`: temp file beside it, fsync, rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        data = text.encode() if isinstance(text, str) else text
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    """Write `obj` as indented JSON, atomically, so a person can read and edit it."""
    write_atomic(path, json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=2) + "\n")


def write_json_lines(path: Path, obj: dict[str, Any]) -> None:
    """Write a dict a key a line, and a list a item a line, each compact, atomically.

    For files that grow with the run (out.json lists every stage): as easy to read as indented
    JSON, and written by the C encoder, where indenting falls back to a slower one.
    """
    parts = []
    for key, value in obj.items():
        if isinstance(value, list) and value:
            items = ",\n".join(f"    {dumps(item)}" for item in value)
            parts.append(f"  {dumps(key)}: [\n{items}\n  ]")
        else:
            parts.append(f"  {dumps(key)}: {dumps(value)}")
    write_atomic(path, "{\n" + ",\n".join(parts) + "\n}\n")


def read_bytes(path: str | Path) -> bytes:
    """The whole of a file, read with the fewest calls: a continue reads every stage's record.

    Errors are those of open(): FileNotFoundError, or an OSError naming the file.
    """
    fd = os.open(path, os.O_RDONLY)
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


def append_line(path: Path, obj: Any, *, sync: bool = True) -> int:
    """Append `obj` as one JSON line; return the offset the line starts at.

    `sync=False` is for lines that only report progress: losing one in a crash loses nothing a
    continue needs.
    """
    data = (dumps(obj) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    try:
        offset = os.lseek(fd, 0, os.SEEK_END)
        _write_all(fd, data)
        if sync:
            os.fsync(fd)
        return offset
    finally:
        os.close(fd)


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
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        _write_all(self._fd, data)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
