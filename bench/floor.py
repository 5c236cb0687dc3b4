"""The floor: the durable writes awf promises for each stage, done in a bare loop and nothing else.

Per stage, a whole file through a temp file, fsync and rename (the stage's current record), and
an fsynced append of one line (its entry in the history). No process start, no JSON, no checks:
what is left is what this disk charges for the promise.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

# Byte for byte the size of what awf writes for a trivial stage: the indented record (310 bytes)
# and the log line that holds it again (391).
RECORD = (
    b'{\n  "version": 1,\n  "stage": "s00000",\n  "outcome": "succeeded",\n  "origin": "ran",\n'
    b'  "attempt": 1,\n  "started": "2026-01-01T00:00:00.000+00:00",\n'
    b'  "ended": "2026-01-01T00:00:00.000+00:00",\n  "has_result": true,\n  "value": {\n    "i": 0\n  },\n'
    b'  "summary": null,\n  "reason": null,\n  "workflow_version": "1.0.0"\n}\n'
)
LINE = (
    b'{"version": 1, "kind": "stage", "at": "2026-01-01T00:00:00.000+00:00", "attempt": 1, "stage": "s00000", '
    b'"record": {"version": 1, "stage": "s00000", "outcome": "succeeded", "origin": "ran", "attempt": 1, '
    b'"started": "2026-01-01T00:00:00.000+00:00", "ended": "2026-01-01T00:00:00.000+00:00", "has_result": true, '
    b'"value": {"i": 0}, "summary": null, "reason": null, "workflow_version": "1.0.0"}}\n'
)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def durable_writes(folder: Path, count: int) -> float:
    """Seconds for `count` stages' worth of durable writes into a fresh `folder`."""
    stages = folder / "stages"
    stages.mkdir(parents=True)
    log = folder / "run.jsonl"
    start = time.perf_counter()
    for i in range(count):
        name = f"s{i:05d}.json"
        temp = stages / f".{name}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _write_all(fd, RECORD)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, stages / name)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            _write_all(fd, LINE)
            os.fsync(fd)
        finally:
            os.close(fd)
    return time.perf_counter() - start
