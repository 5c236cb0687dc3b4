"""Shared fixtures: a project folder, workflow files in it, the real `awf` CLI in a subprocess, and the
fake model server (tests/fakemodel) the real agent CLIs are pointed at."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel

AWF = [sys.executable, "-m", "awf"]


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def out(self) -> dict[str, Any]:
        return json.loads(self.stdout)


class Project:
    """A temporary folder where runs happen, with helpers to write workflows and run awf."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.env = {**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}

    def write(self, name: str, text: str) -> Path:
        file = self.path / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(textwrap.dedent(text).lstrip())
        return file

    def awf(
        self,
        *args: str,
        timeout: float = 60,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        input: str | None = None,
    ) -> Result:
        done = subprocess.run(
            [*AWF, *args],
            cwd=cwd or self.path,
            env={**self.env, **(env or {})},
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def awf_imports(self, *args: str, env: dict[str, str] | None = None) -> tuple[Result, set[str]]:
        """awf under `python -X importtime`: what it answered, and every module it imported."""
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "awf", *args],
            cwd=self.path,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=60,
        )
        timings = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
        stderr = "".join(line + "\n" for line in done.stderr.splitlines() if not line.startswith("import time:"))
        modules = {line.rsplit("|", 1)[-1].strip() for line in timings[1:]}  # the first is the header
        return Result(done.returncode, done.stdout, stderr), modules

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """awf in the background, in a session of its own, as a terminal would run it."""
        return subprocess.Popen(
            [*AWF, *args],
            cwd=self.path,
            env={**self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def run_dir(self, workflow: str, run_id: str) -> Path:
        return self.path / ".awf" / "runs" / workflow / run_id

    def log(self, workflow: str, run_id: str) -> list[dict[str, Any]]:
        """The log's lines; a last line still being appended (no newline yet) is not one yet."""
        text = (self.run_dir(workflow, run_id) / "run.jsonl").read_text()
        whole = text[: text.rfind("\n") + 1]
        return [json.loads(line) for line in whole.splitlines() if line.strip()]

    def stage(self, workflow: str, run_id: str, stage: str) -> dict[str, Any] | None:
        path = self.run_dir(workflow, run_id) / "stages" / f"{stage}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def wait_for(self, path: Path, timeout: float = 30) -> None:
        """Until `path` exists: a workflow touches a file to say it has reached a point."""
        deadline = time.monotonic() + timeout
        while not path.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"{path} never appeared")
            time.sleep(0.02)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


@pytest.fixture
def model() -> Iterator[FakeModel]:
    """The fake model server, on a loopback port of its own."""
    with FakeModel() as server:
        yield server


def finish(process: subprocess.Popen[str], timeout: float = 30) -> Result:
    stdout, stderr = process.communicate(timeout=timeout)
    return Result(process.returncode, stdout, stderr)


def send(process: subprocess.Popen[str], number: int = signal.SIGINT) -> None:
    os.kill(process.pid, number)


# libfaketime moves a process's wall clock (and its children's): a test moves time past a due time
# instead of waiting for it. The monotonic clock, which timeouts run on, is left as it is.
FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
needs_faketime = pytest.mark.skipif(
    not FAKETIME.exists(), reason="libfaketime is not installed (apt-get install faketime)"
)


def clock_past(when: float) -> dict[str, str]:
    """The environment of a process whose wall clock reads a second past `when` (a Unix time) as
    it starts, and runs on from there."""
    ahead = max(0, int(when - time.time()) + 1) + 1
    return {"LD_PRELOAD": str(FAKETIME), "FAKETIME": f"+{ahead}", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def wait_until(condition: Callable[[], object], what: str, timeout: float = 120) -> None:
    """Poll `condition` until it holds; fail naming `what` once `timeout` seconds pass without it."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.05)


def pytest_sessionstart(session: pytest.Session) -> None:
    cache = getattr(session.config, "cache", None)
    if not hasattr(session.config, "workerinput") and cache is not None:
        for figures in ("awf-faults", "awf-escapes"):
            shutil.rmtree(cache.mkdir(figures), ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The fault suite's figures, as docs/durability.md quotes them."""
    cache = getattr(config, "cache", None)
    if cache is None:
        return
    folder = cache.mkdir("awf-faults")
    totals: dict[str, Counter[str]] = {}
    for file in sorted(folder.glob("*.json")):
        figures = json.loads(file.read_text())
        totals.setdefault(figures.pop("kind"), Counter()).update(figures)
    for kind, tally in totals.items():
        tried = sum(tally.values())
        detail = ", ".join(f"{count} {how}" for how, count in sorted(tally.items()))
        terminalreporter.write_line(f"{kind}: {tried} tried, {tried} survived ({detail})")
    escapes: dict[tuple[str, str], Counter[str]] = {}
    for file in sorted(cache.mkdir("awf-escapes").glob("*.json")):
        figures = json.loads(file.read_text())
        escapes.setdefault((figures["who"], figures["profile"]), Counter()).update(
            {"tried": figures["tried"], "held": figures["held"]}
        )
    for (who, profile), tally in sorted(escapes.items()):
        terminalreporter.write_line(
            f"escapes by an agent of awf run as {who}, under {profile}: {tally['tried']} tried, {tally['held']} held"
        )
