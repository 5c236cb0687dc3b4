"""A continue reads run.jsonl once as it starts, however much its start asks of the history."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from conftest import AWF, Project

from awf.record import entries

CRASHES = """
import os
import signal
from pathlib import Path

import awf


@awf.workflow(name="crashy", events={"go": None})
async def crashy(wf):
    await wf.stage("first", lambda: first(), result={"type": "integer"})
    await wf.stage("second", lambda: second(), result={"type": "integer"})
    return "done"


async def first():
    return 1


async def second():
    if not Path("crashed").exists():
        Path("crashed").touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return 2
"""


def _reads_before_the_first_stage(trace: Path, log: Path) -> int:
    """The opens of `log` for reading (not the O_RDWR look at its tail) that come before the
    attempt's first stage-start line is written, as strace saw them."""
    reads = 0
    for line in trace.read_text().splitlines():
        if "write(" in line and "stage-start" in line:
            return reads
        if "openat(" in line and f'"{log}"' in line and "O_RDONLY" in line and "= -1" not in line:
            reads += 1
    raise AssertionError(f"the attempt wrote no stage-start line:\n{trace.read_text()[-3000:]}")


def test_a_continue_after_a_crash_reads_the_history_once_for_all_its_start_asks(project: Project, tmp_path: Path):
    project.write("crashy.py", CRASHES)
    crashed = project.awf("run", "crashy.py", "--id", "r1")
    assert crashed.code == -9, crashed.stderr
    log = project.run_dir("crashy", "r1") / "run.jsonl"
    # What the crashed attempt's agents would have left: a process, a pane, a turn cut short.
    gone = {"pid": os.getpid(), "process_start": "a process long gone"}
    for line in (
        entries.agent_process(attempt=1, agent="coder", command=["claude"], stage="second", **gone),
        entries.pane(
            attempt=1,
            agent="coder",
            multiplexer="tmux",
            server="awf-test-no-such-server",
            workspace="awf crashy r1 #1",
            window="coder",
            **gone,
        ),
        entries.turn_start(
            attempt=1,
            agent="coder",
            turn=1,
            harness="claude",
            session="s-1",
            session_file=str(tmp_path / "a-session-file-since-removed.jsonl"),
            session_offset=0,
        ),
    ):
        entries.append(log, line)

    trace = tmp_path / "trace"
    strace = ["strace", "-f", "-qq", "-e", "trace=openat,write", "-s", "120", "-o", str(trace)]
    done = subprocess.run(
        [*strace, *AWF, "run", "crashy.py", "--id", "r1", "--continue"],
        cwd=project.path,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    # Each ask was answered: the crashed attempt named, its agents looked for, its turn counted.
    assert "attempt 1 was interrupted in stage second" in done.stderr
    assert re.search(r"attempt 1's agents had panes in the workspace", done.stderr), done.stderr
    assert [e["attempt"] for e in map(json.loads, log.read_text().splitlines()) if e["kind"] == "usage"] == [1]
    assert _reads_before_the_first_stage(trace, log) == 1


TURNS = """
import sys

import awf

AGENT = {"harness": "exec", "command": [sys.executable, "-c", "import sys; sys.stdin.read(); print('ok')"]}


@awf.workflow(name="turns")
async def turns(wf):
    async def ask():
        agent = await wf.agents.open(key="asker", runtime=AGENT)
        for n in range(3):
            await agent.run(prompt=f"turn {n}")

    await wf.stage("first", lambda: 1, result={"type": "integer"})
    await wf.stage("ask", ask)
"""


def test_a_continue_under_a_budget_reads_the_log_once_however_many_turns_it_starts(project: Project, tmp_path: Path):
    project.write("turns.py", TURNS)
    (project.path / "turns.py").write_text(TURNS.replace('await wf.stage("ask", ask)', 'wf.stop("later")'))
    assert project.awf("run", "turns.py", "--id", "r1").code == 3
    project.write("turns.py", TURNS)
    log = project.run_dir("turns", "r1") / "run.jsonl"
    trace = tmp_path / "trace"
    strace = ["strace", "-f", "-qq", "-e", "trace=openat", "-o", str(trace)]
    done = subprocess.run(
        [*strace, *AWF, "run", "turns.py", "--id", "r1", "--continue", "--max-cost", "5"],
        cwd=project.path,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert len([e for e in map(json.loads, log.read_text().splitlines()) if e["kind"] == "turn"]) == 3
    reads = [
        line
        for line in trace.read_text().splitlines()
        if f'"{log}"' in line and "O_RDONLY" in line and "= -1" not in line
    ]
    assert len(reads) == 1, "\n".join(reads)
