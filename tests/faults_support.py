"""Faults for the tests: awf under strace, its write points found by a traced run and then hit
one at a time with a SIGKILL or an error (strace's -e inject), and checks of what is left."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import AWF, Result

from awf.record.schemas import check

# The system calls awf's record is written with, by the names strace knows them by.
WRITE_CALLS = ("fsync", "fdatasync", "rename", "write", "pwrite64", "unlink", "mkdir", "openat")
# openat, mkdir, rename, unlink: only those on a path inside the run root are write points.
PATH_CALLS = ("openat", "mkdir", "rename", "unlink")
STRACE = shutil.which("strace")

_CALL = re.compile(r"^(\d+)\s+([a-z0-9_]+)\((.*)$")


@dataclass(frozen=True)
class Call:
    """One system call of awf's main thread: its name, which one of that name it was (from 1,
    as strace's when= counts), and what strace printed of it."""

    name: str
    nth: int
    text: str


def trace(argv: list[str], cwd: Path, env: dict[str, str], out: Path) -> tuple[Result, list[Call]]:
    """Run awf once under strace, and list the write calls of its main thread."""
    names = ",".join(WRITE_CALLS)
    done = subprocess.run(
        [STRACE, "-f", "-qq", "-y", "-s", "160", "-e", f"trace={names}", "-o", str(out), *AWF, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    calls: list[Call] = []
    counts: dict[str, int] = {}
    main: str | None = None
    for line in out.read_text(errors="replace").splitlines():
        match = _CALL.match(line)
        if match is None:
            continue  # a resumed call, a signal, an exit: counted where it began
        pid, name, text = match.groups()
        main = main or pid
        if pid != main:
            continue  # strace counts each thread's calls apart; the record is written by the main one
        counts[name] = counts.get(name, 0) + 1
        calls.append(Call(name, counts[name], text))
    return Result(done.returncode, done.stdout, done.stderr), calls


def write_points(calls: list[Call], root: Path, name: str) -> list[int]:
    """Which calls named `name` touch the run root: the when= numbers worth hitting."""
    marker = str(root)
    return [call.nth for call in calls if call.name == name and marker in call.text]


def inject(
    argv: list[str], cwd: Path, env: dict[str, str], name: str, nth: int, fault: str, timeout: float = 120
) -> Result:
    """Run awf with the `nth` call named `name` of its main thread hit by `fault`
    (`signal=SIGKILL`, `error=ENOSPC`, ...)."""
    strace = [STRACE, "-f", "-qq", "-o", "/dev/null", "-e", f"trace={name}", "-e", f"inject={name}:{fault}:when={nth}"]
    done = subprocess.run(
        [*strace, *AWF, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Result(done.returncode, done.stdout, done.stderr)


def spread(points: list[int], most: int) -> list[int]:
    """At most `most` of `points`, evenly spread, always with the first and the last."""
    if most <= 0 or len(points) <= most:
        return points
    if most == 1:
        return [points[-1]]
    step = (len(points) - 1) / (most - 1)
    return sorted({points[round(i * step)] for i in range(most)})


def awf(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> Result:
    done = subprocess.run([*AWF, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return Result(done.returncode, done.stdout, done.stderr)


def no_traceback(result: Result) -> bool:
    return "Traceback" not in result.stderr and "Traceback" not in result.stdout


def fits_its_schemas(run_dir: Path) -> list[str]:
    """Every file of a run that does not fit its JSON Schema, with why; [] when all do."""
    problems = []
    kinds = {"out.json": "out", "attempt.pid": "attempt-pid"}
    files = [run_dir / name for name in kinds] + sorted((run_dir / "stages").glob("*.json"))
    for file in files:
        if not file.exists():
            continue
        kind = kinds.get(file.name, "stage")
        try:
            check(kind, json.loads(file.read_text()), file)
        except Exception as error:  # what is wrong is the finding
            problems.append(f"{file}: {error}")
    log = run_dir / "run.jsonl"
    data = log.read_bytes()
    for number, raw in enumerate(data.splitlines(keepends=True), 1):
        if not raw.endswith(b"\n"):
            continue  # a torn last line: a crash may leave it, and readers skip it
        try:
            entry: Any = json.loads(raw)
        except ValueError:
            problems.append(f"{log} line {number} is not JSON: {raw[:80]!r}")
            continue
        try:
            check("log-entry", entry, log, f"line {number} ")
        except Exception as error:
            problems.append(str(error))
    return problems
