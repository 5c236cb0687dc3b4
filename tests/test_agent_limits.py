"""`--max-agents`: never more turns of a runtime at once across a run root than its limit; a turn
that waits says on whom, a crash frees its slot, and a limit that cannot be kept is refused."""

from __future__ import annotations

import itertools
import os
import signal
import time
from datetime import datetime

from conftest import Project, finish, wait_until

EX = """
import os
import sys

import awf

# The agent: works until the file `go` is there (when GATED), then answers.
WORK = "import os, time\\nwhile GATED and not os.path.exists('go'): time.sleep(0.02)\\ntime.sleep(0.3)\\nprint('done')"
AGENT = [sys.executable, "-c", WORK]


@awf.workflow(name="ex", description="One exec turn.")
async def ex(wf: awf.Context) -> str:
    async def work() -> str:
        agent = await wf.agents.open(key="worker", runtime={"harness": "exec", "command": AGENT})
        turn = await agent.run(prompt="Work.", timeout=float(os.environ.get("TURN_TIMEOUT", "60")))
        if not turn.outcome.answered:
            wf.stop(f"no answer: {turn.outcome.reason}")
        return str(turn.outcome.value)

    return await wf.stage("work", work, result={"type": "string"})
"""


def write(project: Project, *, gated: bool = True) -> None:
    project.write("ex.py", EX.replace("GATED", str(gated)))


def lines(project: Project, run_id: str, kind: str) -> list[dict]:
    path = project.run_dir("ex", run_id) / "run.jsonl"
    return [line for line in project.log("ex", run_id) if line["kind"] == kind] if path.exists() else []


def turn_spans(project: Project, ids: list[str]) -> list[tuple[datetime, datetime]]:
    """Each turn's start and end, read off its turn-start and turn lines."""
    at = datetime.fromisoformat
    return [
        (at(start["at"]), at(end["at"]))
        for run_id in ids
        for start, end in zip(lines(project, run_id, "turn-start"), lines(project, run_id, "turn"), strict=True)
    ]


def test_three_runs_started_at_once_under_exec_1_take_turns_one_at_a_time_and_each_says_it_waits(project: Project):
    write(project)
    first = project.start("run", "ex.py", "--id", "a", "--share-folder", "--max-agents", "exec=1")
    wait_until(lambda: lines(project, "a", "turn-start"), "a's turn started")
    others = {
        run_id: project.start("run", "ex.py", "--id", run_id, "--share-folder", env={"AWF_MAX_AGENTS": "exec=1"})
        for run_id in ("b", "c")
    }
    wait_until(lambda: all(lines(project, run_id, "slot-wait") for run_id in others), "b and c wait")
    listing = project.awf("runs").stdout
    for run_id in others:
        row = next(line for line in listing.splitlines() if line.split()[1] == run_id)
        assert "running, waiting for an exec slot (1 in use: ex/a worker)" in row
        assert lines(project, run_id, "slot-wait")[0]["held_by"] == ["ex/a worker"]
    (project.path / "go").touch()
    results = {"a": finish(first, 60), **{run_id: finish(process, 60) for run_id, process in others.items()}}
    assert {run_id: result.code for run_id, result in results.items()} == {"a": 0, "b": 0, "c": 0}
    for run_id in others:
        assert "worker is waiting for an exec slot (1 in use: ex/a worker)" in results[run_id].stderr
    spans = sorted(turn_spans(project, ["a", "b", "c"]))
    assert len(spans) == 3
    assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(spans)), spans


def test_the_wait_counts_against_timeout_but_not_against_the_turns_own_timeout(project: Project):
    write(project)
    holder = project.start("run", "ex.py", "--id", "a", "--share-folder", "--max-agents", "exec=1")
    wait_until(lambda: lines(project, "a", "turn-start"), "a's turn started")
    own = {"TURN_TIMEOUT": "1.5"}
    patient = project.start("run", "ex.py", "--id", "b", "--share-folder", "--max-agents", "exec=1", env=own)
    hurried = project.start(
        "run", "ex.py", "--id", "c", "--share-folder", "--max-agents", "exec=1", "--timeout", "2s", env=own
    )
    wait_until(lambda: lines(project, "b", "slot-wait") and lines(project, "c", "slot-wait"), "b and c wait")
    time.sleep(2.5)  # longer than the turn's own timeout; c's --timeout passes meanwhile
    (project.path / "go").touch()
    assert finish(holder, 60).code == 0
    assert finish(patient, 60).code == 0  # waited past 1.5 s, then answered within its own 1.5 s
    ended = finish(hurried, 60)
    assert ended.code == 1 and "timed-out" in ended.stderr
    assert not lines(project, "c", "turn-start")


def test_a_crashed_attempt_frees_its_slot(project: Project):
    write(project)
    holder = project.start("run", "ex.py", "--id", "a", "--share-folder", "--max-agents", "exec=1")
    wait_until(lambda: lines(project, "a", "turn-start"), "a's turn started")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(30)
    (project.path / "go").touch()  # lets a's agent, if a crash left it running, end
    done = project.awf("run", "ex.py", "--id", "b", "--share-folder", "--max-agents", "exec=1")
    assert done.code == 0, done.stderr
    assert "waiting for" not in done.stderr


def test_a_limit_of_zero_or_a_bad_spec_is_refused_and_starts_nothing(project: Project):
    write(project)
    refused = {
        ("--max-agents", "exec=0"): {},
        ("--max-agents", "exec"): {},
        ("--max-agents", "exec=two"): {},
        (): {"AWF_MAX_AGENTS": "claude=1,=2"},
    }
    for flags, env in refused.items():
        done = project.awf("run", "ex.py", "--id", "a", *flags, env=env)
        assert done.code == 2, (flags, env)
        assert done.stderr.startswith("awf: ")
        assert "such as claude=2" in done.stderr or "give 1 or more" in done.stderr
    config = project.path / ".awf" / "runs" / "awf.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[agents]\nmax = {exec = 0}\n")
    done = project.awf("run", "ex.py", "--id", "a")
    assert (done.code, done.stderr) == (
        2,
        f"awf: {config}: [agents] max: exec=0 would let no exec turn run; give 1 or more, or leave exec out\n",
    )
    done = project.awf("run", "ex.py", "--id", "a", "--queue", "--max-agents", "exec=0")
    assert done.code == 2
    assert not project.run_dir("ex", "a").exists()
    served = project.awf("serve", "--max-agents", "exec=0")
    assert served.code == 2 and served.stderr.startswith("awf: --max-agents")


def test_the_run_roots_awf_toml_sets_the_limits(project: Project):
    write(project)
    config = project.path / ".awf" / "runs" / "awf.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[agents]\nmax = {exec = 1}\n")
    holder = project.start("run", "ex.py", "--id", "a", "--share-folder")
    wait_until(lambda: lines(project, "a", "turn-start"), "a's turn started")
    waiter = project.start("run", "ex.py", "--id", "b", "--share-folder")
    wait_until(lambda: lines(project, "b", "slot-wait"), "b waits")
    (project.path / "go").touch()
    assert finish(holder, 60).code == 0 and finish(waiter, 60).code == 0
