"""`awf run --queue` and `awf serve --max-attempts`: runs put in the run root's queue, started by
serve in the order of their priority and age, never more at once than the limit, each once."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from conftest import AWF, Project, finish, wait_until

THREE = """
import asyncio

import awf

@awf.workflow(name="three", description="Three short stages.", prepare=lambda argv: {"n": argv[0] if argv else "0"})
async def three(wf, n: str):
    async def step():
        await asyncio.sleep(0.3)
        return n
    for name in ("plan", "build", "review"):
        await wf.stage(name, step, result={"type": "string"})
    return n
"""


class Serving:
    """A running `awf serve` on the project's run root, with its flags, its output in a file."""

    def __init__(self, project: Project, *flags: str) -> None:
        self.log = project.path / ".awf" / "runs" / "serve.log"
        self.output = (project.path / "serve.out").open("a")
        self.process = subprocess.Popen(
            [*AWF, "serve", *flags], cwd=project.path, env=project.env, stdout=self.output, stderr=subprocess.STDOUT
        )

    def lines(self) -> list[str]:
        if not self.log.exists():
            return []
        return [json.loads(line)["text"] for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self, number: int = signal.SIGTERM) -> int:
        self.process.send_signal(number)
        code = self.process.wait(timeout=30)
        self.output.close()
        return code


@contextmanager
def serving(project: Project, *flags: str) -> Iterator[Serving]:
    serve = Serving(project, *flags)
    try:
        yield serve
    finally:
        if serve.process.poll() is None:
            assert serve.stop() == 0


def queue(project: Project, run_id: str, *flags: str) -> str:
    done = project.awf("run", "three.py", "--id", run_id, "--share-folder", "--queue", *flags, "--", run_id)
    assert done.code == 0, done.stderr
    return done.stdout


def completed(project: Project, ids: list[str]) -> bool:
    return all(
        any(line["kind"] == "attempt-end" and line["outcome"] == "completed" for line in project.log("three", run_id))
        for run_id in ids
    )


def spans(project: Project, ids: list[str]) -> list[tuple[datetime, datetime, str]]:
    """Each attempt's start and end, read off its attempt-start and attempt-end lines."""
    found = []
    for run_id in ids:
        starts = {
            line["attempt"]: line["at"] for line in project.log("three", run_id) if line["kind"] == "attempt-start"
        }
        for line in project.log("three", run_id):
            if line["kind"] == "attempt-end":
                at = datetime.fromisoformat
                found.append((at(starts[line["attempt"]]), at(line["at"]), run_id))
    return found


def most_at_once(found: list[tuple[datetime, datetime, str]]) -> int:
    moments = sorted([(start, 1) for start, _, _ in found] + [(end, -1) for _, end, _ in found])
    alive = most = 0
    for _, step in moments:  # an end sorts before a start at the same moment
        alive += step
        most = max(most, alive)
    return most


def each_stage_once(project: Project, ids: list[str]) -> None:
    for run_id in ids:
        log = project.log("three", run_id)
        assert [line["attempt"] for line in log if line["kind"] == "attempt-start"] == [1], run_id
        assert sorted(line["stage"] for line in log if line["kind"] == "stage") == ["build", "plan", "review"], run_id


def test_a_queued_run_is_made_as_a_start_makes_it_and_waits_with_its_place(project: Project):
    project.write("three.py", THREE)
    assert queue(project, "a") == "queued three/a: place 1 of 1\n"
    assert queue(project, "b", "--priority", "5") == "queued three/b: place 1 of 2\n"
    log = project.log("three", "b")
    assert [line["kind"] for line in log] == ["run", "queued"]
    assert log[1]["on"] == "serve" and log[1]["priority"] == 5
    assert log[1]["command"][:5] == ["run", str(project.path / "three.py"), "--id", "b", "--continue"]
    listing = project.awf("runs").stdout
    assert "queued, place 1" in next(line for line in listing.splitlines() if line.startswith("three     b"))
    assert "queued, place 2" in next(line for line in listing.splitlines() if line.startswith("three     a"))
    shown = {run["id"]: run["place"] for run in json.loads(project.awf("runs", "--json").stdout)["runs"]}
    assert shown == {"a": 2, "b": 1}


def test_a_queue_refuses_what_a_start_refuses_and_what_it_cannot_go_with(project: Project):
    project.write("three.py", THREE)
    queue(project, "a")
    refused = {
        "an id that is taken": ["--id", "a"],
        "a second queued attempt": ["--id", "a", "--continue"],
        "a continue of no run": ["--id", "nothing", "--continue"],
        "--plan": ["--id", "c", "--plan"],
        "--on ray": ["--id", "c", "--on", "ray"],
    }
    for what, flags in refused.items():
        done = project.awf("run", "three.py", "--queue", *flags)
        assert done.code == 2, what
        assert done.stderr.startswith("awf: ") and done.stdout == "", what
    assert "already" in project.awf("run", "three.py", "--queue", "--id", "a", "--continue").stderr
    # A continue by hand while serve's queue holds one would make two attempts nobody asked for.
    by_hand = project.awf("run", "three.py", "--id", "a", "--continue")
    assert (by_hand.code, by_hand.stderr) == (
        2,
        "awf: an attempt of three/a waits in awf serve's queue already: "
        "withdraw it first (awf cancel three/a), or let awf serve start it\n",
    )
    assert [line["kind"] for line in project.log("three", "a")] == ["run", "queued"]
    done = project.awf("run", "three.py", "--id", "c", "--priority", "2")
    assert (done.code, done.stderr) == (
        2,
        "awf: --priority goes only with --queue: it orders the queue awf serve starts\n",
    )
    assert not (project.path / ".awf" / "runs" / "three" / "c").exists()


def test_cancel_withdraws_a_queued_run_and_serve_never_starts_it(project: Project):
    project.write("three.py", THREE)
    queue(project, "a")
    queue(project, "b")
    done = project.awf("cancel", "three/a")
    assert done.code == 0 and "withdrew the queued attempt of three/a" in done.stderr
    assert project.log("three", "a")[-1]["kind"] == "unqueued"
    assert "queued" not in next(line for line in project.awf("runs").stdout.splitlines() if " a " in line)
    with serving(project, "--max-attempts", "1"):
        wait_until(lambda: completed(project, ["b"]), "b completed")
    assert not [line for line in project.log("three", "a") if line["kind"] == "attempt-start"]


def test_cancel_waits_while_a_continue_holds_the_run_and_never_says_it_withdrew_what_may_start(project: Project):
    from filelock import FileLock

    project.write("three.py", THREE)
    queue(project, "a")
    # The run is claimed as serve's continue claims it, before it has read the queued line.
    claim = FileLock(str(project.run_dir("three", "a") / "attempt.lock"), timeout=0)
    claim.acquire()
    cancel = project.start("cancel", "three/a")
    time.sleep(1.5)
    assert cancel.poll() is None, "awf cancel did not wait for the run to be let go"
    assert [line["kind"] for line in project.log("three", "a")] == ["run", "queued"]
    claim.release()  # the continue let the run go without starting
    done = finish(cancel, timeout=30)
    assert done.code == 0, done.stderr
    assert "withdrew the queued attempt of three/a: it will not start" in done.stderr
    assert [line["kind"] for line in project.log("three", "a")] == ["run", "queued", "unqueued"]


def test_eight_queued_runs_under_max_attempts_two_never_overlap_more_than_two_and_each_stage_runs_once(
    project: Project,
):
    project.write("three.py", THREE)
    ids = [f"r{n}" for n in range(8)]
    for run_id in ids:
        queue(project, run_id)
    with serving(project, "--max-attempts", "2") as serve:
        wait_until(lambda: completed(project, ids), "all eight completed")
    assert most_at_once(spans(project, ids)) == 2
    each_stage_once(project, ids)
    assert len([line for line in serve.lines() if "from the queue" in line]) == 8


def test_priorities_order_the_starts_then_the_oldest_first(project: Project):
    project.write("three.py", THREE)
    for run_id, priority in [("low", "0"), ("high", "9"), ("mid", "5"), ("low2", "0"), ("high2", "9")]:
        queue(project, run_id, "--priority", priority)
    ids = ["low", "high", "mid", "low2", "high2"]
    with serving(project, "--max-attempts", "1"):
        wait_until(lambda: completed(project, ids), "all completed")
    order = [run_id for _, _, run_id in sorted(spans(project, ids))]
    assert order == ["high", "high2", "mid", "low", "low2"]


def test_serve_killed_mid_queue_and_started_again_completes_every_run_once(project: Project):
    project.write("three.py", THREE)
    ids = [f"r{n}" for n in range(6)]
    for run_id in ids:
        queue(project, run_id)
    serve = Serving(project, "--max-attempts", "2")
    try:
        wait_until(lambda: sum(completed(project, [run_id]) for run_id in ids) >= 2, "two completed")
    finally:
        serve.stop(signal.SIGKILL)
    with serving(project, "--max-attempts", "2"):
        wait_until(lambda: completed(project, ids), "all completed after the restart")
    each_stage_once(project, ids)
    assert most_at_once(spans(project, ids)) <= 2


GATE = """
import asyncio
import os
import signal

import awf

@awf.workflow(name="gate", description="Plan, then build once the file go is there.")
async def gate(wf):
    async def plan():
        return "planned"

    async def build():
        if CRASH:
            os.kill(os.getpid(), signal.SIGKILL)
        while not os.path.exists("go"):
            await asyncio.sleep(0.05)
        return wf.attempt

    await wf.stage("plan", plan, result={"type": "string"})
    return await wf.stage("build", build, result={"type": "integer"})
"""


def test_after_a_reboot_serve_queues_the_continue_of_an_attempt_it_started_once(project: Project):
    project.write("gate.py", GATE.replace("CRASH", "False"))
    assert project.awf("run", "gate.py", "--id", "g1", "--queue", "--priority", "3").code == 0
    serve = Serving(project)

    def building() -> bool:
        return any(line["kind"] == "stage-start" and line["stage"] == "build" for line in project.log("gate", "g1"))

    try:
        wait_until(building, "attempt 1 in build")
    finally:
        serve.stop(signal.SIGKILL)  # the machine goes down: serve and the attempt with it
    attempt = next(line for line in project.log("gate", "g1") if line["kind"] == "attempt-start")
    os.kill(attempt["pid"], signal.SIGKILL)
    wait_until(lambda: "interrupted" in project.awf("runs", "gate/g1").stdout, "attempt 1 reads interrupted")
    (project.path / "go").touch()
    with serving(project) as again:
        wait_until(lambda: project.stage("gate", "g1", "build") is not None, "build recorded")
        wait_until(lambda: any(line["kind"] == "attempt-end" for line in project.log("gate", "g1")), "attempt 2 ended")
    assert "queued gate/g1 again: attempt 1, which it started, was interrupted" in again.lines()
    log = project.log("gate", "g1")
    queued = [line for line in log if line["kind"] == "queued"]
    assert [line.get("interrupted") for line in queued] == [None, 1]
    assert queued[1]["priority"] == 3
    assert [line["stage"] for line in log if line["kind"] == "stage"] == ["plan", "build"]
    assert project.stage("gate", "g1", "build")["value"] == 2
    said = len(again.lines())
    with serving(project) as third:
        time.sleep(2)
    assert not [line for line in third.lines()[said:] if "gate/g1" in line]


def test_a_run_that_crashes_on_every_attempt_is_queued_again_with_a_backoff_then_given_up_on(project: Project):
    project.write("gate.py", GATE.replace("CRASH", "True"))
    assert project.awf("run", "gate.py", "--id", "c1", "--queue").code == 0
    with serving(project) as serve:
        wait_until(lambda: any("gave up on gate/c1" in line for line in serve.lines()), "given up on", timeout=180)
        time.sleep(1)
    starts = [line["at"] for line in project.log("gate", "c1") if line["kind"] == "attempt-start"]
    assert len(starts) == 5
    again = [line["interrupted"] for line in project.log("gate", "c1") if line.get("interrupted")]
    assert again == [1, 2, 3, 4]
    gaps = [
        (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds() for a, b in itertools.pairwise(starts)
    ]
    assert gaps[2] >= 2 and gaps[3] >= 4  # the back-off: 1, 2, 4 s after the start of the one before
    assert "5 interrupted attempts in a row" in next(line for line in serve.lines() if "gave up" in line)


def test_awf_watch_of_a_queued_run_waits_for_its_attempt_and_shows_it_or_says_it_was_withdrawn(project: Project):
    project.write("three.py", THREE)
    queue(project, "a")
    queue(project, "b")
    watching = {run_id: project.start("watch", f"three/{run_id}") for run_id in ("a", "b")}
    time.sleep(1)
    assert project.awf("cancel", "three/b").code == 0
    withdrawn = finish(watching["b"], 30)
    assert withdrawn.code == 1
    assert "three/b waits in the queue awf serve starts (place 2)" in withdrawn.stderr
    assert "awf: the queued attempt of three/b was withdrawn before it started" in withdrawn.stderr
    with serving(project):
        shown = finish(watching["a"], 60)
    assert shown.code == 0
    assert "▶ three/a · attempt 1" in shown.stderr and "✓ three/a completed (attempt 1)" in shown.stderr
