"""`awf serve` and the wakes around it: asleep when idle, one attempt per wake, a timer woken
once, a crash-looping run backed off and given up on."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest
from conftest import AWF, Project, wait_until

INBOX = """
import awf

@awf.workflow(name="inbox", description="Handle COUNT events, one stage each.", events={"x": None, "other": None})
async def inbox(wf):
    for number in range(COUNT):
        event = await wf.events.receive("x")
        await wf.stage(f"handle-{number}", lambda: event.value, result={"type": "integer"})
    return "done"
"""

SLEEPER = """
import awf

@awf.workflow(name="sleeper", description="Sleep, then go.", events={"unused": None})
async def sleeper(wf):
    await wf.events.sleep("cool-off", "SECONDS")
    return await wf.stage("after", lambda: wf.attempt, result={"type": "integer"})
"""

CRASHER = """
import os
import signal

import awf

@awf.workflow(name="crasher", description="Dies on every event.", events={"go": None})
async def crasher(wf):
    await wf.events.receive("go")
    await wf.stage("handle", lambda: os.kill(os.getpid(), signal.SIGKILL))
"""


class Serving:
    """A running `awf serve` on the project's run root, its output in a file."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.log = project.path / ".awf" / "runs" / "serve.log"
        self.output = (project.path / "serve.out").open("w")
        self.process = subprocess.Popen(
            [*AWF, "serve"], cwd=project.path, env=project.env, stdout=self.output, stderr=subprocess.STDOUT
        )

    def lines(self) -> list[str]:
        if not self.log.exists():
            return []
        return [json.loads(line)["text"] for line in self.log.read_text().splitlines() if line.strip()]

    def wait_for(self, text: str, count: int = 1, timeout: float = 60) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            found = [line for line in self.lines() if text in line]
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"serve.log never said {text!r} {count} times:\n" + "\n".join(self.lines()))
            time.sleep(0.05)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=30)
        self.output.close()
        return code


@contextmanager
def serving(project: Project) -> Iterator[Serving]:
    serve = Serving(project)
    try:
        serve.wait_for("asleep until")
        yield serve
    finally:
        if serve.process.poll() is None:
            assert serve.stop() == 0


def entries(project: Project, workflow: str, run_id: str, kind: str) -> list[dict]:
    return [e for e in project.log(workflow, run_id) if e["kind"] == kind]


def reads(pid: int) -> int:
    """The read calls a process has made, as the kernel counts them."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("syscr:"):
            return int(line.split()[1])
    raise AssertionError("no syscr in /proc/PID/io")


def test_serve_beside_many_runs_sleeps_and_reads_nothing_while_nothing_changes(project: Project):
    project.write("inbox.py", INBOX.replace("COUNT", "1"))
    assert project.awf("run", "inbox.py", "--id", "done").code == 0
    assert project.awf("send", "inbox/done", "x", "--data", "1", "--no-wake").code == 0
    assert project.awf("run", "inbox.py", "--id", "done", "--continue").code == 0  # completes
    assert project.awf("run", "inbox.py", "--id", "waiting").code == 0
    runs = project.path / ".awf" / "runs" / "inbox"
    for number in range(60):
        shutil.copytree(runs / "done", runs / f"completed-{number}")
        shutil.copytree(runs / "waiting", runs / f"waiting-{number}")
    with serving(project) as serve:
        assert "looked at 122 runs" in serve.wait_for("looked at")[0]
        before = reads(serve.process.pid)
        # Others read the runs meanwhile: their opens and reads wake nothing either.
        assert "parked: x" in project.awf("runs").stdout
        assert project.awf("logs", "inbox/waiting-3").code == 0
        time.sleep(3)
        assert reads(serve.process.pid) - before < 10
        assert not [line for line in serve.lines() if line.startswith("woke")]


def test_a_burst_of_events_over_several_runs_starts_at_most_one_attempt_per_event_and_none_refused(project: Project):
    runs, per_run = 5, 8
    project.write("inbox.py", INBOX.replace("COUNT", str(per_run)))
    for number in range(runs):
        assert project.awf("run", "inbox.py", "--id", f"r{number}").code == 0
    with serving(project) as serve:
        failures: list[str] = []

        def send(number: int, value: int) -> None:
            sent = project.awf("send", f"inbox/r{number}", "x", "--data", str(value))
            if sent.code != 0:
                failures.append(sent.stderr)

        # Four senders at once, as a burst of CI reports might come.
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda job: send(*job), [(n, v) for v in range(per_run) for n in range(runs)]))
        assert not failures

        def all_completed() -> bool:
            return all(
                (project.run_dir("inbox", f"r{n}") / "out.json").exists()
                and '"completed"' in (project.run_dir("inbox", f"r{n}") / "out.json").read_text()
                for n in range(runs)
            )

        wait_until(all_completed, "every run took its events and completed")
        serve_lines = serve.lines()
    for number in range(runs):
        starts = entries(project, "inbox", f"r{number}", "attempt-start")
        takes = entries(project, "inbox", f"r{number}", "take")
        assert len(takes) == per_run
        woken = starts[1:]
        assert 1 <= len(woken) <= per_run
        # Every attempt a wake started took at least one event.
        assert {start["attempt"] for start in woken} == {take["attempt"] for take in takes}
        wake_log = (project.run_dir("inbox", f"r{number}") / "wake.log").read_text()
        assert "taken by" not in wake_log and "refused" not in wake_log
        ends = entries(project, "inbox", f"r{number}", "attempt-end")
        assert len(ends) == len(starts), wake_log  # none interrupted, none still going
    assert not [line for line in serve_lines if "taken by" in line or "refused" in line]


def test_a_timer_wakes_its_run_once(project: Project):
    project.write("sleeper.py", SLEEPER.replace("SECONDS", "2s"))
    first = project.awf("run", "sleeper.py", "--id", "s1", "--json")
    assert first.code == 0 and first.out["outcome"] == "parked"
    with serving(project) as serve:
        wait_until(lambda: len(entries(project, "sleeper", "s1", "attempt-end")) == 2, "the timer's wake ended")
        end = entries(project, "sleeper", "s1", "attempt-end")[-1]
        assert end["outcome"] == "completed"
        # A completed run is not looked at again: serve sleeps on, and stops when told.
        assert serve.stop() == 0
    assert [line for line in serve.lines() if line.startswith("woke")] == [
        line for line in serve.lines() if line.startswith("woke sleeper/s1: attempt 2 started")
    ]
    assert len([line for line in serve.lines() if line.startswith("woke")]) == 1
    assert len(entries(project, "sleeper", "s1", "attempt-start")) == 2


def test_a_crash_looping_run_is_backed_off_then_given_up_on_until_a_person_or_an_event_tries_again(project: Project):
    project.write("crasher.py", CRASHER)
    assert project.awf("run", "crasher.py", "--id", "c1").code == 0
    with serving(project) as serve:
        assert project.awf("send", "crasher/c1", "go", "--no-wake").code == 0
        # Six attempts and 1 + 2 + 4 + 8 s of backing off: on a loaded machine, well past a minute.
        gave_up = serve.wait_for("gave up on crasher/c1", timeout=180)
        mark = "crash-looping: 5 interrupted attempts; awf wake crasher/c1 to try again"
        assert gave_up == [f"gave up on crasher/c1, {mark}"]
        starts = entries(project, "crasher", "c1", "attempt-start")
        assert len(starts) == 6 and not entries(project, "crasher", "c1", "attempt-end")[1:]
        assert len([line for line in serve.lines() if line.startswith("woke crasher/c1")]) == 5
        # Each retry after the first waits longer: 1, 2, 4 s after the last one started.
        started = [datetime.fromisoformat(start["at"]).timestamp() for start in starts]
        gaps = [later - earlier for earlier, later in itertools.pairwise(started[2:])]
        assert all(gap >= wait - 0.01 for gap, wait in zip(gaps, [1, 2, 4], strict=True)), gaps

        assert f"interrupted · {mark}" in project.awf("runs").stdout
        assert json.loads(project.awf("runs", "crasher/c1", "--json").stdout)["crash_looping"] == 5
        skipped = project.awf("wake")
        assert skipped.stdout == "" and "skipped crasher/c1, crash-looping" in skipped.stderr

        woke = project.awf("wake", "crasher/c1")
        assert woke.code == 0 and woke.stdout.startswith("woke crasher/c1")
        serve.wait_for("crash-looping: 6 interrupted attempts")
        assert project.awf("send", "crasher/c1", "go", "--no-wake").code == 0
        serve.wait_for("(a new event: trying a crash-looping run again)")
        serve.wait_for("crash-looping: 7 interrupted attempts")
    assert len(entries(project, "crasher", "c1", "attempt-start")) == 8


@pytest.fixture(autouse=True)
def _no_stray_attempts(project: Project) -> Iterator[None]:
    """No test leaves an attempt running behind it."""
    yield
    root = project.path / ".awf" / "runs"
    for pid_file in root.glob("*/*/attempt.pid"):
        try:
            os.kill(json.loads(pid_file.read_text())["pid"], signal.SIGKILL)
        except (ProcessLookupError, ValueError, KeyError):
            pass


def test_a_run_whose_files_cannot_be_read_is_named_once_and_serve_goes_on_serving_the_others(project: Project):
    project.write("inbox.py", INBOX.replace("COUNT", "1"))
    for run_id in ("bad", "good"):
        assert project.awf("run", "inbox.py", "--id", run_id).code == 0
    with serving(project) as serve:
        lock = project.run_dir("inbox", "bad") / "events.lock"
        lock.unlink()
        lock.mkdir()  # a lock file that cannot be locked
        assert project.awf("send", "inbox/bad", "x", "--data", "1", "--no-wake").code != 0
        with (project.run_dir("inbox", "bad") / "events.jsonl").open("a") as inbox:
            inbox.write("\n")
        assert "events.lock" in serve.wait_for("cannot wake inbox/bad")[0]
        # A run being made is a folder renamed into place: serve leaves the half-made one alone.
        making = project.path / ".awf" / "runs" / "inbox" / "new~4242.awf-tmp"
        making.mkdir()
        (making / "attempt.lock").touch()
        assert project.awf("send", "inbox/good", "x", "--data", "2").code == 0
        wait_until(
            lambda: '"completed"' in (project.run_dir("inbox", "good") / "out.json").read_text(),
            "the good run to take its event and complete",
        )
        assert serve.process.poll() is None
        assert sorted(path.name for path in making.iterdir()) == ["attempt.lock"]
    assert len([line for line in serve.lines() if line.startswith("cannot wake inbox/bad")]) == 1


def test_serve_whose_run_root_is_removed_and_made_again_stops_saying_why(project: Project):
    project.write("inbox.py", INBOX.replace("COUNT", "1"))
    assert project.awf("run", "inbox.py", "--id", "waiting").code == 0
    serve = Serving(project)
    try:
        serve.wait_for("asleep until")
        root = project.path / ".awf" / "runs"
        # Emptied, then replaced by a new folder in one rename: serve never finds it missing, only
        # another folder in its place.
        for child in root.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        fresh = project.path / ".awf" / "runs-made-again"
        fresh.mkdir()
        os.rename(fresh, root)
        code = serve.process.wait(timeout=30)
    finally:
        if serve.process.poll() is None:
            serve.stop()
        serve.output.close()
    said = (project.path / "serve.out").read_text()
    assert code == 3, said
    assert "was removed and made again" in said and "start awf serve again" in said
    assert "Traceback" not in said
    # The new root is free: a second serve takes it, and serves it.
    assert project.awf("run", "inbox.py", "--id", "again").code == 0
    with serving(project):
        assert project.awf("send", "inbox/again", "x", "--data", "1", "--no-wake").code == 0
        wait_until(lambda: bool(entries(project, "inbox", "again", "attempt-end")[1:]), "the send woke the run")
