"""An agent's output on disk: kept whole up to a cap, past which its middle is dropped, and the drop said.

An agent's process writes its standard streams straight to files in its turn's folder (so one
left running after awf is gone keeps its output), and awf never holds more of them in memory
than the cap: a command that prints a gigabyte before its answer costs a read of each end.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..record.files import file_size, open_read, write_atomic

DEFAULT_CAP = 16 * 2**20  # bytes a stream keeps on disk: the runtime's "max_output" changes it


def size_of(path: Path | None) -> int:
    """How long a file an agent's program writes is now (a stream, a session, a log): 0 while it
    is not there (or not known), so that what it writes next is read from its first byte."""
    if path is None:
        return 0
    try:
        return file_size(path)
    except OSError:
        return 0


def cap_output(path: Path, cap: int) -> int:
    """Keep the file at `path` to about `cap` bytes: past it, its first and last halves stay, cut at
    line ends, with a line between them saying how much was dropped. The bytes dropped (0: whole)."""
    try:
        size = file_size(path)
    except FileNotFoundError:
        return 0
    if size <= cap:
        return 0
    half = cap // 2
    with open_read(path) as handle:
        head = handle.read(half)
        handle.seek(size - half)
        tail = handle.read(half)
    line_end = head.rfind(b"\n")
    if line_end >= 0:
        head = head[: line_end + 1]
    line_end = tail.find(b"\n")
    if 0 <= line_end < len(tail) - 1:
        tail = tail[line_end + 1 :]
    dropped = size - len(head) - len(tail)
    note = (
        f"[awf: {dropped:,} bytes of the middle of this output were dropped: it was {size:,} bytes, "
        f'past the {cap:,} its runtime keeps ("max_output")]\n'
    )
    if head and not head.endswith(b"\n"):
        note = "\n" + note
    write_atomic(path, head + note.encode() + tail)
    return dropped


def read_end(path: Path, limit: int) -> str:
    """The last `limit` bytes of a file as text ("…" first when there was more); "" when it is missing."""
    try:
        with open_read(path) as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(size - limit, 0))
            data = handle.read()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return "…" + text if size > limit else text
