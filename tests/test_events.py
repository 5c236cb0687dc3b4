"""Runs that wait for events: park with no process, wake on `awf send`, replay, and redo safely."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest
from conftest import AWF, Project, clock_past, needs_faketime

MERGE = """
import asyncio
from pathlib import Path

import awf

CI = {"type": "object", "required": ["passed"], "properties": {"passed": {"type": "boolean"}}}
APPROVAL = {"type": "object", "required": ["by"], "properties": {"by": {"type": "string"}}}


async def work(wf, stage, value):
    Path(f"ran-{stage}-{wf.attempt}").touch()
    if Path(f"hang-{stage}").exists():
        Path(f"in-{stage}").touch()
        await asyncio.sleep(3600)
    return value


@awf.workflow(name="merge", description="Open an MR, wait for CI and approval, merge.", version="1.0.0",
              events={"ci": CI, "approved": APPROVAL, "note": None})
async def merge(wf):
    mr = await wf.stage("open", lambda: work(wf, "open", {"mr": 7}), result={"type": "object"})
    ci = await wf.events.receive("ci")
    if not ci.value["passed"]:
        wf.stop("CI failed")
    checked = await wf.stage("check", lambda: work(wf, "check", f"ci {ci.id}"), result={"type": "string"})
    winner = await wf.events.race(approved=wf.events.receive("approved"), remind=wf.events.timer("{remind}"))
    said = await wf.stage("merge", lambda: work(wf, "merge", f"{winner.name}:{winner.value}"),
                          result={"type": "string"})
    return {"mr": mr["mr"], "checked": checked, "said": said}
"""


@pytest.fixture
def merge(project: Project) -> Project:
    project.write("merge.py", MERGE.replace("{remind}", "1h"))
    return project


def out(project: Project) -> dict:
    return json.loads((project.run_dir("merge", "m1") / "out.json").read_text())


def wait_attempt_end(project: Project, attempt: int, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ends = [e for e in project.log("merge", "m1") if e["kind"] == "attempt-end" and e["attempt"] == attempt]
        if ends:
            return ends[0]
        time.sleep(0.05)
    raise AssertionError(f"attempt {attempt} did not end: {(project.run_dir('merge', 'm1') / 'wake.log').read_text()}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def gone(pid: int, timeout: float = 10) -> bool:
    """The attempt's process exits right after it writes its ending."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def pids(project: Project) -> list[int]:
    return [e["pid"] for e in project.log("merge", "m1") if e["kind"] == "attempt-start"]


def test_a_run_parks_wakes_on_send_parks_again_and_completes_with_no_process_between(merge: Project):
    first = merge.awf("run", "merge.py", "--id", "m1")
    assert first.code == 0, first.stderr
    assert "parked" in first.stderr and "awf send merge/m1 ci --data JSON" in first.stderr
    # One command, once: the go on line, with no note that says it again.
    assert first.stderr.count("awf send merge/m1 ci --data JSON") == 1
    assert out(merge)["outcome"] == "parked" and out(merge)["waits"][0]["names"] == ["ci"]
    assert gone(pids(merge)[0])
    listed = merge.awf("runs")
    assert "parked: ci" in listed.stdout
    assert json.loads(merge.awf("runs", "--json").stdout)["runs"][0]["waiting"][0]["names"] == ["ci"]

    sent = merge.awf("send", "merge/m1", "ci", "--data", '{"passed": true}')
    assert sent.code == 0 and sent.stdout.strip()
    assert "woke merge/m1" in sent.stderr
    end = wait_attempt_end(merge, 2)
    assert end["outcome"] == "parked" and end["waits"][0]["names"] == ["approved"]
    assert gone(pids(merge)[1])

    assert merge.awf("send", "merge/m1", "approved", "--data", '{"by": "ann"}').code == 0
    assert wait_attempt_end(merge, 3)["outcome"] == "completed"
    value = out(merge)["value"]
    assert value["said"].startswith("approved:") and "'by': 'ann'" in value["said"]
    # open ran once; check ran once, on the wake that brought CI.
    assert sorted(p.name for p in merge.path.glob("ran-*")) == ["ran-check-2", "ran-merge-3", "ran-open-1"]
    takes = [e for e in merge.log("merge", "m1") if e["kind"] == "take"]
    assert [t["name"] for t in takes] == ["ci"] and takes[0]["wait"] == "-/receive:ci#1"


def test_an_event_id_sent_twice_is_queued_once(merge: Project):
    merge.awf("run", "merge.py", "--id", "m1")
    for _ in range(2):
        result = merge.awf("send", "merge/m1", "note", "--data", '"hi"', "--event-id", "n-1", "--no-wake")
        assert result.code == 0 and result.stdout.strip() == "n-1"
    assert "already queued as n-1" in result.stderr and "not queued twice" in result.stderr
    other = merge.awf("send", "merge/m1", "note", "--data", '"bye"', "--event-id", "n-1", "--no-wake")
    assert other.code == 2 and other.stdout == ""
    assert 'event id n-1 was first sent as note "hi"' in other.stderr and "nothing was queued" in other.stderr
    renamed = merge.awf("send", "merge/m1", "ci", "--data", '{"passed": true}', "--event-id", "n-1")
    assert renamed.code == 2 and "first sent as note" in renamed.stderr
    lines = (merge.run_dir("merge", "m1") / "events.jsonl").read_text().splitlines()
    assert len(lines) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "has no event 'nope'; its workflow declares: approved, ci, note"),
        (["ci", "--data", '{"passed": "yes"}'], "$.passed: 'yes' is not of type 'boolean'"),
        (["ci", "--data", "{not json"], "is not JSON"),
    ],
)
def test_a_bad_event_is_refused_and_nothing_is_queued(merge: Project, args: list[str], message: str):
    merge.awf("run", "merge.py", "--id", "m1")
    result = merge.awf("send", "merge/m1", *args)
    assert result.code == 2 and result.stderr.startswith("awf: ") and message in result.stderr
    assert not (merge.run_dir("merge", "m1") / "events.jsonl").exists()
    assert merge.awf("send", "merge/nope", "ci").code == 1


@needs_faketime
def test_a_race_between_an_event_and_a_timer_is_replayed_on_the_next_wake(project: Project):
    project.write(
        "merge.py",
        MERGE.replace("{remind}", "1s")
        + """

@awf.workflow(name="after", description="unused", events={"x": None})
async def after(wf):
    pass
""",
    )
    assert project.awf("run", "merge.py:merge", "--id", "m1").code == 0
    assert project.awf("send", "merge/m1", "ci", "--data", '{"passed": true}', "--no-wake").code == 0
    woke = project.awf("wake")
    assert woke.code == 0 and "woke merge/m1" in woke.stdout
    end = wait_attempt_end(project, 2)
    assert end["outcome"] == "parked" and end["waits"][0]["due"]
    project.awf("wake", env=clock_past(datetime.fromisoformat(end["waits"][0]["due"]).timestamp()))
    assert wait_attempt_end(project, 3)["outcome"] == "completed"
    assert out(project)["value"]["said"] == "remind:None"
    # Approval arrives late; a redo of merge replays the race's recorded answer.
    project.awf("send", "merge/m1", "approved", "--data", '{"by": "bo"}', "--no-wake")
    redo = project.awf("run", "merge.py:merge", "--id", "m1", "--continue", "--from-stage", "merge", "--json")
    assert redo.code == 0, redo.stderr
    assert redo.out["value"]["said"] == "remind:None"
    races = [e for e in project.log("merge", "m1") if e["kind"] == "race"]
    assert len(races) == 1 and races[0]["winner"] == "remind"


def test_serve_wakes_a_run_within_a_second_of_a_send_with_no_wake(merge: Project):
    assert merge.awf("run", "merge.py", "--id", "m1").code == 0
    serve = subprocess.Popen([*AWF, "serve"], cwd=merge.path, env=merge.env, stderr=subprocess.PIPE, text=True)
    try:
        log = merge.path / ".awf" / "runs" / "serve.log"
        merge.wait_for(log)  # it watches the run root once it has said so
        assert merge.awf("send", "merge/m1", "ci", "--data", '{"passed": true}', "--no-wake").code == 0
        queued = time.monotonic()
        while "woke merge/m1" not in log.read_text():
            assert time.monotonic() - queued < 10
            time.sleep(0.01)
        assert time.monotonic() - queued < 1.0
        second = merge.awf("serve")
        assert second.code == 2 and "already serves" in second.stderr
    finally:
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=10) == 0
    assert wait_attempt_end(merge, 2)["outcome"] == "parked"


def test_a_crash_after_a_wake_costs_nothing_awf_wake_goes_on(merge: Project):
    merge.awf("run", "merge.py", "--id", "m1")
    (merge.path / "hang-check").touch()
    merge.awf("send", "merge/m1", "ci", "--data", '{"passed": true}')
    merge.wait_for(merge.path / "in-check")
    os.kill(pids(merge)[1], signal.SIGKILL)
    (merge.path / "hang-check").unlink()
    time.sleep(0.2)
    woke = merge.awf("wake")
    assert "woke merge/m1" in woke.stdout
    end = wait_attempt_end(merge, 3)
    assert end["outcome"] == "parked"  # check ran again on the same CI event, then waits for approval
    assert (merge.path / "ran-check-3").exists()
    takes = [e for e in merge.log("merge", "m1") if e["kind"] == "take"]
    assert len(takes) == 1


# Redo in a run with events.


def completed(merge: Project) -> None:
    merge.awf("run", "merge.py", "--id", "m1")
    merge.awf("send", "merge/m1", "ci", "--data", '{"passed": true}', "--no-wake")
    merge.awf("send", "merge/m1", "approved", "--data", '{"by": "ann"}', "--no-wake")
    assert merge.awf("run", "merge.py", "--id", "m1", "--continue").code == 0


def test_a_redo_reuses_what_comes_before_and_reruns_what_comes_after_replaying_takes_and_races(merge: Project):
    completed(merge)
    before = out(merge)["value"]
    result = merge.awf("run", "merge.py", "--id", "m1", "--continue", "--from-stage", "check", "--json")
    assert result.code == 0, result.stderr
    assert [(s["stage"], s["how"]) for s in result.out["stages"]] == [
        ("open", "reused"),
        ("check", "ran"),
        ("merge", "ran"),
    ]
    assert result.out["value"] == before  # same CI event, same race answer


def test_a_take_older_than_the_redo_is_not_taken_again_so_the_redo_parks_and_the_next_wake_finishes_it(merge: Project):
    completed(merge)
    result = merge.awf("run", "merge.py", "--id", "m1", "--continue", "--from-stage", "open", "--json")
    assert result.code == 0 and result.out["outcome"] == "parked"
    assert result.out["waits"][0]["names"] == ["ci"]
    # check handled the old CI event: it is not reached, keeps its record and is not redone yet.
    assert merge.stage("merge", "m1", "check")["attempt"] == 2
    merge.awf("send", "merge/m1", "ci", "--data", '{"passed": true}')
    end = wait_attempt_end(merge, 4)
    # The wake redoes check (its record is older than the redo) on the new event; the race keeps its answer.
    assert end["outcome"] == "completed", end
    assert (merge.path / "ran-check-4").exists() and (merge.path / "ran-merge-4").exists()
    assert not (merge.path / "ran-open-4").exists()


def test_a_redo_the_look_ahead_sees_park_before_its_stage_is_refused_and_the_run_stays_parked(merge: Project):
    merge.awf("run", "merge.py", "--id", "m1")
    for plan in ([], ["--plan"]):
        result = merge.awf("run", "merge.py", "--id", "m1", "--continue", "--from-stage", "merge", *plan)
        assert result.code == 2 and result.stdout == "", result.stderr
        assert result.stderr.startswith(
            "awf: --from-stage merge: the redo would park before it reaches stage merge, waiting for ci after stage "
            "open, and no ci event waits in the run's inbox; a redo stops rather than park on its way, so nothing "
            "was started.\n"
        )
        assert "awf send merge/m1 ci --data JSON --no-wake), then redo; or redo from a stage before the wait " in (
            result.stderr
        )
        assert len(result.stderr.splitlines()) == 2
    assert [e["kind"] for e in merge.log("merge", "m1")].count("attempt-start") == 1
    assert "redo" not in [e["kind"] for e in merge.log("merge", "m1")]
    assert "parked: ci" in merge.awf("runs").stdout
    # Sent first without a wake, the event is there for the redo: it takes it, and then parks past check.
    merge.awf("send", "merge/m1", "ci", "--data", '{"passed": true}', "--no-wake")
    merge.awf("run", "merge.py", "--id", "m1", "--continue")
    refused = merge.awf("run", "merge.py", "--id", "m1", "--continue", "--from-stage", "merge", "--json")
    assert refused.code == 2 and refused.out["error"]["kind"] == "refused"
    assert "waiting for approved or until 20" in refused.out["error"]["message"]
    assert "--from-stage check" in refused.out["error"]["message"]


NOTIFY = """
    await wf.agents.open(key="notifier", runtime={"harness": "exec", "command": ["true"]})
    ci = await wf.events.receive("ci")"""


def test_a_redo_that_stops_rather_than_park_stays_wakeable_and_the_wake_goes_on_with_it(project: Project):
    # An agent opened between stages: the look-ahead cannot see past it, so the redo starts.
    project.write(
        "merge.py", MERGE.replace("{remind}", "1h").replace('\n    ci = await wf.events.receive("ci")', NOTIFY, 1)
    )
    project.awf("run", "merge.py", "--id", "m1")
    project.awf("send", "merge/m1", "ci", "--data", '{"passed": true}', "--no-wake")
    assert project.awf("run", "merge.py", "--id", "m1", "--continue").code == 0  # parks on the race
    redo = project.awf("run", "merge.py", "--id", "m1", "--continue", "--from-stage", "merge")
    assert redo.code == 3
    assert "would park before it reaches --from-stage merge" in redo.stderr
    assert "the attempt that wakes goes on with the redo from merge" in redo.stderr
    assert "go on:   awf send merge/m1 approved --data JSON" in redo.stderr
    assert out(project)["waits"][0]["names"] == ["approved"]
    assert "stopped, wakes on approved or " in project.awf("runs").stdout
    assert project.awf("wake").stdout == ""  # nothing it waits for has come
    sent = project.awf("send", "merge/m1", "approved", "--data", '{"by": "ann"}')
    assert sent.code == 0 and "woke merge/m1: attempt 4 started" in sent.stderr, sent.stderr
    assert wait_attempt_end(project, 4)["outcome"] == "completed"
    assert (project.path / "ran-merge-4").exists() and not (project.path / "ran-check-4").exists()


@needs_faketime
def test_a_redo_that_stops_before_a_sleep_is_woken_when_the_sleep_is_due(project: Project):
    project.write(
        "cool.py",
        """
from pathlib import Path

import awf

@awf.workflow(name="merge", description="Cool off, then go.", events={"unused": None})
async def cool(wf):
    await wf.stage("before", lambda: None)
    if Path("hold").exists():
        wf.stop("held")
    await wf.agents.open(key="notifier", runtime={"harness": "exec", "command": ["true"]})
    await wf.events.sleep("cool-off", "3s")
    return await wf.stage("after", lambda: wf.attempt, result={"type": "integer"})
""",
    )
    (project.path / "hold").touch()
    project.awf("run", "cool.py", "--id", "m1")
    (project.path / "hold").unlink()  # the redo's attempt is the first to reach the sleep: it is due 3 s after
    redo = project.awf("run", "cool.py", "--id", "m1", "--continue", "--from-stage", "after", "--json")
    assert redo.code == 3 and redo.out["waits"][0]["due"]
    due = datetime.fromisoformat(redo.out["waits"][0]["due"]).timestamp()
    assert "woke merge/m1" in project.awf("wake", env=clock_past(due)).stdout
    assert wait_attempt_end(project, 3)["outcome"] == "completed"
    assert out(project)["value"] == 3


@pytest.mark.parametrize("resume", [True, False])
def test_a_redo_that_would_park_on_a_time_before_its_stage_is_refused(project: Project, resume: bool):
    project.write(
        "cool.py",
        """
import awf

@awf.workflow(name="merge", description="Cool off, then go.", events={"unused": None})
async def cool(wf):
    await wf.stage("before", lambda: None)
    await wf.events.sleep("cool-off", "1h")
    return await wf.stage("after", lambda: wf.attempt, result={"type": "integer"})
""",
    )
    if resume:
        project.awf("run", "cool.py", "--id", "m1")
    more = ["--continue"] if resume else []
    result = project.awf("run", "cool.py", "--id", "m1", *more, "--from-stage", "after")
    assert result.code == 2, result.stderr
    assert "the redo would park before it reaches stage after, waiting until 20" in result.stderr
    if resume:
        assert "Redo once that time has passed; or redo from a stage before the wait (--from-stage before)" in (
            result.stderr
        )
    else:
        assert "Start the run from its first stage: it parks at the wait, and awf send wakes it" in result.stderr
        assert not project.run_dir("merge", "m1").exists()


def test_a_crash_inside_the_redo_does_not_drop_it(merge: Project):
    completed(merge)
    (merge.path / "hang-check").touch()
    process = merge.start("run", "merge.py", "--id", "m1", "--continue", "--from-stage", "check")
    merge.wait_for(merge.path / "in-check")
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=10)
    (merge.path / "hang-check").unlink()
    assert "woke merge/m1" in merge.awf("wake").stdout
    assert wait_attempt_end(merge, 4)["outcome"] == "completed"
    assert (merge.path / "ran-check-4").exists() and (merge.path / "ran-merge-4").exists()
    assert not (merge.path / "ran-open-4").exists()


def test_wf_events_in_a_workflow_without_events_is_a_clear_failure(project: Project):
    project.write(
        "plain.py",
        """
import awf

@awf.workflow(name="plain", description="No events.")
async def plain(wf):
    await wf.events.receive("x")
""",
    )
    result = project.awf("run", "plain.py", "--json")
    assert result.code == 1 and "declares no events" in result.out["reason"]


@needs_faketime
def test_a_sleep_parks_until_its_time_of_day_and_awf_wake_before_it_does_nothing(project: Project):
    project.write(
        "cool.py",
        """
import awf

@awf.workflow(name="merge", description="Cool off, then go.", events={"unused": None})
async def cool(wf):
    await wf.stage("before", lambda: None)
    await wf.events.sleep("cool-off", "8s")
    return await wf.stage("after", lambda: wf.attempt, result={"type": "integer"})
""",
    )
    first = project.awf("run", "cool.py", "--id", "m1", "--json")
    assert first.code == 0 and first.out["outcome"] == "parked" and first.out["waits"][0]["due"]
    assert first.out["reason"].startswith("waiting until 20")  # a time of day, nothing to wait for by name
    due = datetime.fromisoformat(first.out["waits"][0]["due"]).timestamp()
    if time.time() < due - 1:  # a loaded machine may take the whole sleep to get here
        assert project.awf("wake").stdout == ""
    assert "woke merge/m1" in project.awf("wake", env=clock_past(due)).stdout
    assert wait_attempt_end(project, 2)["outcome"] == "completed"
    assert out(project)["value"] == 2
    timers = [e for e in project.log("merge", "m1") if e["kind"] == "timer"]
    assert len(timers) == 1 and timers[0]["wait"] == "-/sleep:cool-off#1"


# What awf send refuses, queuing nothing.


def inbox_lines(merge: Project) -> int:
    inbox = merge.run_dir("merge", "m1") / "events.jsonl"
    return len(inbox.read_text().splitlines()) if inbox.exists() else 0


def test_a_completed_run_takes_no_event_and_nothing_is_queued(merge: Project):
    completed(merge)
    before = inbox_lines(merge)
    result = merge.awf("send", "merge/m1", "note", "--data", '"late"')
    assert result.code == 2 and result.stdout == ""
    assert "run merge/m1 has completed; it takes no more events; nothing was queued" in result.stderr
    assert merge.awf("send", "merge/m1", "note", "--queue").code == 2
    assert inbox_lines(merge) == before


def test_a_stopped_run_takes_an_event_only_with_queue_kept_for_a_continue(merge: Project):
    merge.awf("run", "merge.py", "--id", "m1")
    merge.awf("send", "merge/m1", "ci", "--data", '{"passed": false}', "--no-wake")
    assert merge.awf("run", "merge.py", "--id", "m1", "--continue").code == 3  # CI failed: stopped
    refused = merge.awf("send", "merge/m1", "note", "--data", '"again"')
    assert refused.code == 2 and "is stopped, so no wake takes the event; add --queue" in refused.stderr
    assert inbox_lines(merge) == 1
    kept = merge.awf("send", "merge/m1", "note", "--data", '"again"', "--queue")
    assert kept.code == 0 and kept.stdout.strip()
    assert "waits in the inbox of merge/m1 for a continue" in kept.stderr
    assert inbox_lines(merge) == 2
    assert '"queued": 1' in merge.awf("runs", "--json").stdout


def test_an_interrupted_run_is_woken_by_a_send(merge: Project):
    (merge.path / "hang-open").touch()
    process = merge.start("run", "merge.py", "--id", "m1")
    merge.wait_for(merge.path / "in-open")
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=10)
    (merge.path / "hang-open").unlink()
    sent = merge.awf("send", "merge/m1", "ci", "--data", '{"passed": true}')
    assert sent.code == 0 and "woke merge/m1: attempt 2 started" in sent.stderr
    assert wait_attempt_end(merge, 2)["outcome"] == "parked"  # open ran again, took ci, waits for approval


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ci"], "event ci needs a value and --data is missing"),
        (["note", "--event-id", ""], "--event-id is empty"),
        (["note", "--event-id", "ci 1"], "--event-id 'ci 1' holds spaces"),
    ],
)
def test_a_send_with_a_missing_value_or_a_bad_event_id_is_refused(merge: Project, args: list[str], message: str):
    merge.awf("run", "merge.py", "--id", "m1")
    result = merge.awf("send", "merge/m1", *args)
    assert result.code == 2 and result.stderr.startswith("awf: ") and message in result.stderr, result.stderr
    assert "nothing was queued" in result.stderr and inbox_lines(merge) == 0


def test_runs_shows_the_events_queued_and_untaken(merge: Project):
    merge.awf("run", "merge.py", "--id", "m1")
    for text in ("a", "b"):
        assert merge.awf("send", "merge/m1", "note", "--data", json.dumps(text), "--no-wake").code == 0
    assert "parked: ci · 2 queued" in merge.awf("runs").stdout
    one = merge.awf("runs", "merge/m1")
    assert one.stdout.startswith("merge/m1  parked: ci · 2 queued between stages, after open")
    assert json.loads(merge.awf("runs", "merge/m1", "--json").stdout)["queued"] == 2
