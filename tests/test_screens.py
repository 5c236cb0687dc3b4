"""What the screens say, tried as a person would: the closing block, the refusals, the terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from conftest import Project

ASK = str(Path(__file__).parent / "agents" / "ask.py") + ":ask"

CAUGHT = """
import asyncio
import awf


@awf.workflow(name="slow", description="A stage that stops when it is cancelled.")
async def flow(wf):
    async def work():
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            wf.stop("gave up")
        return 1

    return await wf.stage("slow", work)
"""


def test_a_timeout_inside_a_stage_that_stops_on_its_way_out_says_in_the_stage(project: Project) -> None:
    project.write("slow.py", CAUGHT)
    done = project.awf("run", "slow.py", "--id", "t", "--timeout", "1s", timeout=60)
    assert done.code == 1, done.stderr
    assert "slow/t timed-out in slow (attempt 1, exit 1)" in done.stderr
    assert "between stages" not in done.stderr
    [end] = [entry for entry in project.log("slow", "t") if entry["kind"] == "attempt-end"]
    assert end["stage"] == "slow"


def test_a_timeout_while_an_agent_works_says_in_the_stage(project: Project, tmp_path: Path) -> None:
    done = project.awf("run", ASK, "--id", "t", "--timeout", "2s", "--", "sleeps.py", str(tmp_path / "pid"))
    assert done.code == 1, done.stderr
    assert "ask/t timed-out in plan (attempt 1, exit 1)" in done.stderr


BROKEN = """
import sys

sys.stdin.read()
print("loading the model with a line long enough to be cut at the width of any terminal at all", file=sys.stderr)
print("", file=sys.stderr)
print("Error: the API key was refused (401)", file=sys.stderr)
print("   ", file=sys.stderr)
sys.exit(2)
"""


def test_a_failed_exec_agent_shows_the_last_line_of_its_stderr_cut_to_the_width(project: Project) -> None:
    broken = project.write("broken.py", BROKEN)
    main, side = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "awf", "run", ASK, "--id", "f", "--", str(broken)],
            cwd=project.path,
            env={**project.env, "TERM": "dumb", "COLUMNS": "60"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=side,
            timeout=60,
        )
        screen = _read_all(main, most=5.0).decode().replace("\r\n", "\n")
    finally:
        os.close(main)
        os.close(side)
    assert done.returncode == 3, screen
    lines = screen.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  why:     "))
    assert lines[at].endswith("…") and len(lines[at]) == 60
    assert lines[at + 1] == "           Error: the API key was refused (401)"
    assert lines[at + 2] == "           (the whole of it: awf logs ask/f)"
    # Not on a terminal, nothing is cut.
    piped = project.awf("run", ASK, "--id", "g", "--", str(broken))
    assert piped.code == 3 and "the end of its stderr:\n           Error: the API key" in piped.stderr
    assert "Error: the API key was refused (401)" in project.awf("logs", "ask/f").stdout


TWO = """
import awf


@awf.workflow(name="two", description="Two stages.")
async def flow(wf):
    first = await wf.stage("slow", lambda: _value(1), result={"type": "integer"})
    return await wf.stage("fast", lambda: _value(first + 1), result={"type": "integer"})


async def _value(value):
    return value
"""


def test_a_from_stage_that_breaks_the_name_rules_is_refused_with_the_name_it_may_mean(project: Project) -> None:
    project.write("two.py", TWO)
    assert project.awf("run", "two.py", "--id", "r").code == 0
    before = (project.run_dir("two", "r") / "run.jsonl").read_bytes()
    refused = project.awf("run", "two.py", "--id", "r", "--continue", "--from-stage", "Slow")
    assert refused.code == 2 and refused.stdout == ""
    assert refused.stderr.startswith("awf: --from-stage Slow: stage name 'Slow' may hold only lowercase")
    assert refused.stderr.rstrip().endswith("did you mean slow?")
    assert (project.run_dir("two", "r") / "run.jsonl").read_bytes() == before
    spaced = project.awf("run", "two.py", "--id", "r", "--continue", "--from-stage", "Big Step")
    assert spaced.code == 2 and "did you mean big-step?" in spaced.stderr
    odd = project.awf("run", "two.py", "--id", "r", "--continue", "--from-stage", "a/b")
    assert odd.code == 2 and "did you mean" not in odd.stderr


HIDE, SHOW = b"\x1b[?25l", b"\x1b[?25h"

STALLS = """
import asyncio
import awf


@awf.workflow(name="stalls", description="A stage that waits a long time.")
async def flow(wf):
    async def work():
        await asyncio.sleep(600)
        return 1

    return await wf.stage("wait", work)
"""


def _read_all(fd: int, most: float = 1.0) -> bytes:
    """What the terminal has been sent: until it is quiet for a moment, or for at most `most` seconds
    (a live view redraws many times a second)."""
    got = b""
    until = time.monotonic() + most
    while time.monotonic() < until:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            return got
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return got
        if not chunk:
            return got
        got += chunk
    return got


def test_after_a_kill_9_in_the_live_view_the_next_awf_command_shows_the_cursor(project: Project) -> None:
    project.write("stalls.py", STALLS)
    main, side = pty.openpty()
    env = {**project.env, "TERM": "xterm"}
    try:
        live = subprocess.Popen(
            [sys.executable, "-m", "awf", "run", "stalls.py", "--id", "k"],
            cwd=project.path,
            env=env,
            stdin=side,
            stdout=side,
            stderr=side,
        )
        log = project.run_dir("stalls", "k") / "run.jsonl"
        deadline = time.monotonic() + 60
        seen = b""
        while b'"stage-start"' not in (log.read_bytes() if log.exists() else b"") or HIDE not in seen:
            assert time.monotonic() < deadline and live.poll() is None, seen
            seen += _read_all(main)
        live.kill()
        live.wait(timeout=30)
        seen += _read_all(main)
        assert seen.rfind(HIDE) > seen.rfind(SHOW)  # killed: the cursor stays hidden

        shown = subprocess.run(
            [sys.executable, "-m", "awf", "runs"],
            cwd=project.path,
            env=env,
            stdin=side,
            stdout=side,
            stderr=side,
            timeout=60,
        )
        assert shown.returncode == 0
        after = _read_all(main)
        assert SHOW in after and HIDE not in after
    finally:
        os.close(main)
        os.close(side)
