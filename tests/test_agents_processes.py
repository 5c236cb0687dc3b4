"""Agents' processes and the attempt's end: Ctrl-C, a crash of awf, the attempt's --timeout."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

from conftest import Project, finish, send

from awf.agents.reaper import descendants
from awf.record.liveness import is_alive

ASK = str(Path(__file__).parent / "agents" / "ask.py") + ":ask"


def wait_gone(pid: int, timeout: float = 10) -> bool:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if not is_alive(pid, None):
            return True
        time.sleep(0.02)
    return False


def until_found(find, timeout: float = 20):
    """What `find` returns once it returns something."""
    until = time.monotonic() + timeout
    while not (found := find()):
        assert time.monotonic() < until, "never found"
        time.sleep(0.05)
    return found


def recorded_agent(project: Project, workflow: str, run_id: str, program: int) -> int:
    """The process awf recorded for the agent whose program is `program`: with no sandbox, the
    reaper the program runs under, which holds it and whatever it starts."""
    [entry] = [entry for entry in project.log(workflow, run_id) if entry["kind"] == "agent-process"]
    assert program in descendants(entry["pid"])
    return entry["pid"]


def test_ctrl_c_during_a_turn_ends_the_agent_and_records_the_stage_failed(project: Project) -> None:
    pidfile = project.path / "agent.pid"
    process = project.start("run", ASK, "--id", "c", "--", "sleeps.py", str(pidfile))
    project.wait_for(pidfile)
    agent = int(pidfile.read_text())
    send(process, signal.SIGINT)
    done = finish(process)
    assert done.code == 130, done.stderr
    assert wait_gone(agent, timeout=1), "awf exited and left its agent running"
    stage = project.stage("ask", "c", "plan")
    assert stage["outcome"] == "failed" and "SIGINT" in stage["reason"]
    [turn] = [entry for entry in project.log("ask", "c") if entry["kind"] == "turn"]
    assert turn["outcome"] == "cancelled" and "SIGINT" in turn["reason"]


def test_a_crash_leaves_the_agent_and_a_continue_told_to_ignore_it_runs_beside_it(project: Project) -> None:
    pidfile = project.path / "agent.pid"
    process = project.start("run", ASK, "--id", "k", "--", "sleeps.py", str(pidfile))
    project.wait_for(pidfile)
    program = int(pidfile.read_text())
    agent = recorded_agent(project, "ask", "k", program)
    try:
        os.kill(process.pid, signal.SIGKILL)
        finish(process)
        time.sleep(0.2)
        assert is_alive(agent, None) and is_alive(program, None), "the agent's process group must survive awf"

        done = project.awf("run", ASK, "--id", "k", "--continue", "--ignore-leftovers", env={"ANSWER_NOW": "1"})
        assert done.code == 0, done.stderr
        named = [line for line in done.stderr.splitlines() if "still running" in line]
        assert named == [
            f"! agent planner of attempt 1 in stage plan is still running (pid {agent}): it may still be "
            f"changing files; end it with `kill -- -{agent}` unless it should finish"
        ]
        assert done.stderr.index("still running") < done.stderr.index("▸ plan")
        assert is_alive(agent, None), "awf names the agent; it does not end what it did not start"
    finally:
        try:
            os.killpg(agent, signal.SIGKILL)
        except ProcessLookupError:
            pass


def crash_leaving_an_agent(project: Project, run_id: str) -> tuple[int, int]:
    """kill -9 of awf while its agent works: the agent (the pid awf recorded) and its program's child
    (pids returned) go on."""
    pidfile = project.path / f"{run_id}.pid"
    process = project.start("run", ASK, "--id", run_id, "--", "lingers.py", str(pidfile))
    project.wait_for(pidfile)
    program, child = (int(word) for word in pidfile.read_text().split())
    agent = recorded_agent(project, "ask", run_id, program)
    os.kill(process.pid, signal.SIGKILL)
    finish(process)
    return agent, child


def test_a_continue_does_not_start_while_an_agent_of_a_crashed_attempt_still_runs(project: Project) -> None:
    agent, child = crash_leaving_an_agent(project, "k")
    try:
        before = (project.run_dir("ask", "k") / "run.jsonl").read_bytes()
        for extra in ((), ("--plan",)):
            refused = project.awf("run", ASK, "--id", "k", "--continue", *extra, env={"ANSWER_NOW": "1"})
            assert refused.code == 2, refused.stderr
            assert refused.stderr.startswith(
                "awf: run ask/k: an agent of an interrupted attempt still runs, and may still be changing files"
            )
            assert f"  agent planner of attempt 1 in stage plan (pid {agent}): end it with kill -- -{agent}" in (
                refused.stderr
            )
            assert "go on with --end-leftovers to end them first, or --ignore-leftovers" in refused.stderr
        assert (project.run_dir("ask", "k") / "run.jsonl").read_bytes() == before  # nothing recorded
        assert is_alive(agent, None) and is_alive(child, None)

        done = project.awf("run", ASK, "--id", "k", "--continue", "--end-leftovers", env={"ANSWER_NOW": "1"})
        assert done.code == 0, done.stderr
        assert f"! ended agent planner of attempt 1 (pid {agent}) and its process group" in done.stderr
        # The whole group, waited for: the agent's child is gone too, before the attempt began.
        assert not is_alive(agent, None) and wait_gone(child, timeout=1)
        assert "still running" not in done.stderr
        assert [e["attempt"] for e in project.log("ask", "k") if e["kind"] == "attempt-start"] == [1, 2]
    finally:
        for pid in (agent, child):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_the_attempts_timeout_ends_its_agents_and_their_turns_are_timed_out(project: Project) -> None:
    pidfile = project.path / "agent.pid"
    # Long enough for the agent to start on a loaded machine before the attempt's deadline passes.
    process = project.start("run", ASK, "--id", "t", "--timeout", "5s", "--", "sleeps.py", str(pidfile))
    project.wait_for(pidfile)
    done = finish(process)
    assert done.code == 1, done.stderr
    assert wait_gone(int(pidfile.read_text()), timeout=1)
    [turn] = [entry for entry in project.log("ask", "t") if entry["kind"] == "turn"]
    # The turn's deadline is the attempt's: whichever notices first ends it, and it is a timeout.
    assert turn["outcome"] == "timed-out"
    assert re.fullmatch(
        r"timed out after [0-9.]+m?s: no answer by the attempt's --timeout; the agent was ended", turn["reason"]
    )


WAITS_FOR_AN_AGENT = f"""
import sys

import awf

LINGERS = {str(Path(__file__).parent / "agents" / "lingers.py")!r}


@awf.workflow(name="later", description="Works, then waits for an event.", events={{"go": None}})
async def later(wf):
    async def work():
        runtime = {{"harness": "exec", "command": [sys.executable, LINGERS, "w.pid"]}}
        agent = await wf.agents.open(key="worker", runtime=runtime)
        await agent.run(prompt="work")

    await wf.stage("work", work)
    await wf.events.receive("go")
"""


def test_awf_wake_never_continues_a_run_over_an_agent_its_crashed_attempt_left(project: Project) -> None:
    project.write("later.py", WAITS_FOR_AN_AGENT)
    process = project.start("run", "later.py", "--id", "w")
    project.wait_for(project.path / "w.pid")
    program, child = (int(word) for word in (project.path / "w.pid").read_text().split())
    agent = recorded_agent(project, "later", "w", program)
    try:
        os.kill(process.pid, signal.SIGKILL)
        finish(process)
        woke = project.awf("wake")
        assert woke.code == 0 and woke.stdout == ""
        assert (
            f"not woken: later/w was interrupted, and agent worker of attempt 1 (pid {agent}) it left still runs"
            in (woke.stderr)
        )
        assert f"end it with kill -- -{agent}" in woke.stderr and "--continue --end-leftovers" in woke.stderr
        assert [e["attempt"] for e in project.log("later", "w") if e["kind"] == "attempt-start"] == [1]
        os.killpg(agent, signal.SIGKILL)
        assert wait_gone(agent) and wait_gone(child)
        assert project.awf("wake").stdout.startswith("woke later/w")
        # The woken attempt runs its agent again, which lingers: end it, and with it that agent.
        woken = until_found(lambda: [e["pid"] for e in project.log("later", "w") if e["kind"] == "attempt-start"][1:])
        os.kill(woken[0], signal.SIGTERM)
        assert wait_gone(woken[0], timeout=30)
    finally:
        for pid in (agent, child):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_awf_logs_tells_the_crash_where_it_happened_with_the_agents_it_left(project: Project) -> None:
    agent, child = crash_leaving_an_agent(project, "k")
    try:
        crashed = next(e for e in project.log("ask", "k") if e["kind"] == "attempt-start")["pid"]
        told = f"attempt 1 interrupted in stage plan: its process (pid {crashed}) is gone, with no ending"
        before = project.awf("logs", "ask/k")
        assert before.code == 0
        lines = before.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if line.strip() == told)
        assert lines[at + 1].strip() == (
            f"agent planner in stage plan is still running (pid {agent}): end it with kill -- -{agent}"
        )
        assert lines[at + 2].strip() == "go on: awf run " + ASK + " --id k --continue"
        items = [json.loads(line) for line in project.awf("logs", "ask/k", "--json").stdout.splitlines()]
        assert items[-1]["interrupted"]["left_running"] == [{"agent": "planner", "pid": agent, "stage": "plan"}]

        done = project.awf("run", ASK, "--id", "k", "--continue", "--end-leftovers", env={"ANSWER_NOW": "1"})
        assert done.code == 0, done.stderr
        after = project.awf("logs", "ask/k").stdout.splitlines()
        at = next(i for i, line in enumerate(after) if line.strip() == told)
        # Between attempt 1's last line and attempt 2's start, and said once.
        assert "attempt 2" in after[at + 1] and "attempt 1" not in after[at + 1]
        assert sum(told in line for line in after) == 1
        assert any("start point: plan (no record: attempt 1 was interrupted in it)" in line for line in after)
    finally:
        for pid in (agent, child):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_an_answer_for_a_turn_of_an_attempt_a_newer_one_took_over_is_refused_and_not_taken(project: Project) -> None:
    pidfile, go, said = (project.path / name for name in ("late.pid", "go", "said.json"))
    process = project.start("run", ASK, "--id", "late", "--", "answers_later.py", str(pidfile), str(go), str(said))
    project.wait_for(pidfile)
    agent = int(pidfile.read_text())
    try:
        os.kill(process.pid, signal.SIGKILL)
        finish(process)
        done = project.awf("run", ASK, "--id", "late", "--continue", "--ignore-leftovers", env={"ANSWER_NOW": "1"})
        assert done.code == 0, done.stderr
        go.touch()  # the crashed attempt's agent answers its turn only now
        project.wait_for(said)
        answered = json.loads(said.read_text())
        assert answered["code"] == 2
        assert "attempt 1 was interrupted, and attempt 2 has taken the run over" in answered["stderr"]
        assert "this one was not taken" in answered["stderr"]
        assert not (project.run_dir("ask", "late") / "agents/1/planner/turn-1/outcome.json").exists()
    finally:
        try:
            os.killpg(agent, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_the_agents_a_crash_left_running_are_shown_wherever_the_run_is_shown(project: Project) -> None:
    agent, child = crash_leaving_an_agent(project, "k")
    try:
        said = f"agent planner of attempt 1 in stage plan is still running (pid {agent}): end it with kill -- -{agent}"
        listed = project.awf("runs")
        assert listed.code == 0 and "interrupted, 1 agent left running" in listed.stdout
        one = project.awf("runs", "ask/k")
        assert one.code == 0 and said in one.stdout and "left running" in one.stdout
        left = {"attempt": 1, "agent": "planner", "pid": agent, "stage": "plan", "end_command": f"kill -- -{agent}"}
        assert project.awf("runs", "--json").out["runs"][0]["left_running"] == [left]
        assert project.awf("runs", "ask/k", "--json").out["left_running"] == [left]
        watched = project.awf("watch", "ask/k")
        assert watched.code == 1 and f"left running: {said}" in watched.stderr
        logs = project.awf("logs", "ask/k")
        assert f"(pid {agent}): end it with kill -- -{agent}" in logs.stdout
        planned = project.awf("run", ASK, "--id", "k", "--continue", "--plan")
        assert planned.code == 2 and f"(pid {agent}): end it with kill -- -{agent}" in planned.stderr
        os.killpg(agent, signal.SIGKILL)
        assert wait_gone(agent) and wait_gone(child)
        assert "left running" not in project.awf("runs").stdout
        assert project.awf("runs", "--json").out["runs"][0]["left_running"] == []
    finally:
        for pid in (agent, child):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
