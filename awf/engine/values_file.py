"""The --values file of a start part-way: read whole from a regular file of bounded size, and
refused, saying why, when it cannot be used."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ..record.names import stage_name_problem
from .errors import Refusal

# The largest --values file read unless AWF_VALUES_MAX_BYTES says otherwise: a value by hand for
# each stage before a start point is kilobytes; a mistaken path to a device or a dump is refused.
VALUES_MAX_BYTES = 64 * 1024 * 1024


def _values_cap() -> int:
    given = os.environ.get("AWF_VALUES_MAX_BYTES")
    if not given:
        return VALUES_MAX_BYTES
    try:
        cap = int(given)
    except ValueError:
        cap = -1
    if cap < 0:
        raise Refusal(f"AWF_VALUES_MAX_BYTES={given} is not a number of bytes, such as 268435456 for 256 MiB")
    return cap


def read_values(path: Path) -> dict[str, Any]:
    """The --values file: a JSON object by stage name, from a regular file no larger than the cap."""
    cap = _values_cap()
    try:
        # O_NONBLOCK: opening a FIFO for reading would wait for a writer, forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise Refusal(f"--values {path}: no such file") from None
    except OSError as error:
        raise Refusal(f"--values {path} cannot be read: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refusal(f"--values {path} is {_file_kind(info.st_mode)}, not a file: give a JSON file")
        if info.st_size > cap:
            raise Refusal(
                f"--values {path} is {info.st_size} bytes, more than the {cap} read; "
                "set AWF_VALUES_MAX_BYTES to read a larger file"
            )
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read(cap + 1)
        if len(data) > cap:
            raise Refusal(f"--values {path} grew past {cap} bytes as it was read; set AWF_VALUES_MAX_BYTES to read it")
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise Refusal(f"--values {path} cannot be read: {error}") from None
    finally:
        os.close(fd)
    try:
        values = json.loads(text)
    except json.JSONDecodeError as error:
        raise Refusal(f"--values {path} is not JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    if not isinstance(values, dict):
        raise Refusal(
            f"--values {path} holds a {type(values).__name__}; it must be a JSON object by stage name, "
            'such as {"plan": {"doc": "docs/ABC-1.md"}}'
        )
    bad = [name for name in values if stage_name_problem(name)]
    if bad:
        raise Refusal(f"--values {path} names {', '.join(map(repr, bad))}, which cannot be stage names")
    return values


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"
