"""Stops worth retrying: `wf.stop(reason, retry_after=)` and `raise awf.Retry(...)` end the attempt
stopped, record when it is retried, and awf serve (or awf wake) continues the run then, with a
backoff, at most `retries` times in a row; awf cancel withdraws a retry."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
from conftest import Project, clock_past, needs_faketime, wait_until
from test_serve import entries, serving

import awf
import awf.runs
from awf.record.clock import parse_iso

# Stops worth retrying until the file `up` exists; `EVENTS` declares events (or not).
FLOW = """
from pathlib import Path

import awf
import awf.runs


async def check(wf):
    if not Path("up").exists():
        STOP
    return "up"


@awf.workflow(name="deploy", version="1.0.0"EVENTS)
async def deploy(wf):
    await wf.stage("registry", lambda: check(wf), result={"type": "string"})
    return "deployed"
"""


def flow(stop: str, events: bool = False) -> str:
    return FLOW.replace("STOP", stop).replace("EVENTS", ', events={"ci": {}}' if events else "")


def ends(project: Project) -> list[dict]:
    return entries(project, "deploy", "d1", "attempt-end")


def test_a_stop_worth_retrying_records_when_and_every_reader_shows_it(project: Project):
    project.write("deploy.py", flow('wf.stop("the registry is down", retry_after=600, retries=3)'))
    first = project.awf("run", "deploy.py", "--id", "d1", "--json")
    assert first.code == 3, first.stderr
    [end] = ends(project)
    assert end["outcome"] == "stopped" and end["stage"] == "registry" and end["reason"] == "the registry is down"
    retry = end["retry"]
    assert (retry["number"], retry["of"], retry["after"]) == (1, 3, 600)
    assert abs(parse_iso(retry["at"]) - parse_iso(end["at"]) - 600) < 2
    assert first.out["retry"] == retry  # out.json, as --json prints it
    due = datetime.fromtimestamp(parse_iso(retry["at"]))
    day = "" if due.date() == datetime.now().date() else f"{due:%Y-%m-%d} "
    shown = f"retries at {day}{due:%H:%M} (1 of 3)"
    plain = project.awf("run", "deploy.py", "--id", "d1", "--continue")
    assert plain.code == 3
    # A person's continue that stops again is the second retry in a row, twice as far off.
    second = ends(project)[-1]["retry"]
    assert (second["number"], second["after"]) == (2, 1200)
    due = datetime.fromtimestamp(parse_iso(second["at"]))
    day = "" if due.date() == datetime.now().date() else f"{due:%Y-%m-%d} "
    shown = f"retries at {day}{due:%H:%M} (2 of 3)"
    assert f"  retry:   at {day}{due:%H:%M} (2 of 3) by awf serve or awf wake; awf cancel deploy/d1" in plain.stderr
    assert "  go on:   awf run deploy.py --id d1 --continue" in plain.stderr
    listing = project.awf("runs")
    assert re.search(rf"deploy\s+d1\s+stopped, {re.escape(shown)}\s+registry", listing.stdout), listing.stdout
    assert project.awf("runs", "deploy/d1").stdout.startswith(f"deploy/d1  stopped, {shown} in registry")
    assert json.loads(project.awf("runs", "--json").stdout)["runs"][0]["retry"] == second
    assert json.loads(project.awf("runs", "deploy/d1", "--json").stdout)["retry"] == second
    assert f"  {shown}" in project.awf("logs", "deploy/d1").stdout
    run = awf.runs.get("deploy/d1", project.path)
    assert run.retry == awf.runs.Retry(at=second["at"], number=2, of=3, after=1200)
    assert awf.runs.list(project.path)[0].retry == run.retry


@pytest.mark.parametrize("events", [False, True], ids=["no-events", "events"])
def test_serve_retries_with_a_doubling_delay_until_the_retries_run_out(project: Project, events: bool):
    project.write("deploy.py", flow('raise awf.Retry("the registry is down", after=0.5, retries=2)', events))
    assert project.awf("run", "deploy.py", "--id", "d1").code == 3
    with serving(project) as serve:
        wait_until(lambda: len(ends(project)) == 3, "the two retries ended")
        serve.wait_for("woke deploy/d1: attempt 3 started")
    woke = [line.split(", ")[-1] for line in serve.lines() if line.startswith("woke")]
    assert woke == ["retry 1 of 2", "retry 2 of 2"], serve.lines()
    first, second, third = ends(project)
    assert [first["retry"]["after"], second["retry"]["after"]] == [0.5, 1.0]
    assert [first["retry"]["number"], second["retry"]["number"]] == [1, 2]
    assert "retry" not in third  # the third stop in a row: retries=2 are spent
    starts = entries(project, "deploy", "d1", "attempt-start")
    assert len(starts) == 3
    # Each retry starts no sooner than its attempt-end said.
    for before, start in zip((first, second), starts[1:], strict=True):
        assert parse_iso(start["at"]) >= parse_iso(before["retry"]["at"]) - 0.01
    assert len([line for line in serve.lines() if line.startswith("woke")]) == 2
    assert project.awf("runs").stdout.split("\n")[1].split()[2] == "stopped"
    assert json.loads(project.awf("runs", "--json").stdout)["runs"][0]["retry"] is None


def test_a_retry_that_succeeds_completes_the_run_and_a_later_stop_counts_from_one(project: Project):
    project.write("deploy.py", flow('wf.stop("the registry is down", retry_after=0.3)'))
    assert project.awf("run", "deploy.py", "--id", "d1").code == 3
    (project.path / "up").touch()
    with serving(project) as serve:
        wait_until(lambda: len(ends(project)) == 2, "the retry ended")
        serve.wait_for("woke deploy/d1: attempt 2 started")
    assert ends(project)[-1]["outcome"] == "completed"
    assert entries(project, "deploy", "d1", "stage")[-1]["record"]["value"] == "up"
    (project.path / "up").unlink()
    again = project.awf("run", "deploy.py", "--id", "d1", "--continue", "--from-stage", "registry")
    assert again.code == 3, again.stderr
    assert ends(project)[-1]["retry"]["number"] == 1


@needs_faketime
def test_awf_wake_continues_a_retry_when_it_is_due_and_a_person_at_once(project: Project):
    project.write("deploy.py", flow('wf.stop("the registry is down", retry_after=600)'))
    assert project.awf("run", "deploy.py", "--id", "d1").code == 3
    cron = project.awf("wake")
    assert cron.code == 0 and cron.stdout == "", cron.stdout  # not due for ten minutes
    asked = project.awf("wake", "deploy/d1")
    assert asked.code == 0 and asked.stdout.startswith("woke deploy/d1: attempt 2 started"), asked.stderr
    wait_until(lambda: len(ends(project)) == 2, "the woken retry ended")
    assert project.awf("run", "deploy.py", "--id", "d1", "--continue").code == 3
    due = parse_iso(ends(project)[-1]["retry"]["at"])  # 40 minutes off: the third in a row
    assert project.awf("wake").stdout == ""
    due = project.awf("wake", env=clock_past(due))  # the cron, once the retry is due
    assert due.stdout.startswith("woke deploy/d1: attempt 4 started"), due.stdout + due.stderr
    assert due.stdout.rstrip().endswith(", retry 3 of 5"), due.stdout
    wait_until(lambda: len(ends(project)) == 4, "the cron's retry ended")


def test_awf_cancel_withdraws_a_retry_and_nothing_continues_the_run(project: Project):
    project.write("deploy.py", flow('wf.stop("the registry is down", retry_after=0.5)'))
    assert project.awf("run", "deploy.py", "--id", "d1").code == 3
    cancelled = project.awf("cancel", "deploy/d1")
    assert cancelled.code == 0, cancelled.stderr
    assert cancelled.stderr.startswith("withdrew the retry of deploy/d1 due at "), cancelled.stderr
    assert "nothing continues it now but you: awf run deploy.py --id d1 --continue" in cancelled.stderr
    [line] = entries(project, "deploy", "d1", "cancel")
    assert line["retry"] is True and line["attempt"] == 1
    assert json.loads(project.awf("runs", "--json").stdout)["runs"][0]["retry"] is None
    assert "retries at" not in project.awf("runs").stdout
    with serving(project) as serve:
        serve.wait_for("looked at 1 runs")
        wake = project.awf("wake")
        assert wake.stdout == ""
    assert not [line for line in serve.lines() if line.startswith("woke")]
    assert len(ends(project)) == 1
    again = project.awf("cancel", "deploy/d1")
    assert again.code == 1 and "has no attempt running (it is stopped)" in again.stderr, again.stderr
    # A person's continue that stops again is retried afresh: the withdrawn one does not count.
    assert project.awf("run", "deploy.py", "--id", "d1", "--continue").code == 3
    assert ends(project)[-1]["retry"]["number"] == 1


@pytest.mark.parametrize(
    ("stop", "said"),
    [
        ('wf.stop("down", retry_after=0)', "wf.stop: the retry's delay must be a number of seconds above 0, not 0"),
        ('wf.stop("down", retry_after=5, retries=0)', "wf.stop: retries must be a whole number from 1, not 0"),
        ('raise awf.Retry("down", after="soon")', "awf.Retry: the retry's delay must be a number of seconds"),
    ],
)
def test_a_retry_given_wrong_fails_the_attempt_saying_what_is_wrong(project: Project, stop: str, said: str):
    project.write("deploy.py", flow(stop))
    failed = project.awf("run", "deploy.py", "--id", "d1", "--json")
    assert failed.code == 1, failed.stderr
    assert said in failed.out["reason"]
    assert "retry" not in ends(project)[-1]


def test_awf_testing_shows_the_retry(tmp_path):
    from awf.testing import run_workflow

    @awf.workflow(name="deploy", version="1.0.0")
    async def deploy(wf: awf.Context) -> None:
        async def check() -> None:
            raise awf.Retry("the registry is down", after=30, retries=4)

        await wf.stage("registry", check)

    run = run_workflow(deploy, run_root=tmp_path)
    assert run.ending.outcome == "stopped" and run.ending.retry is not None
    assert (run.ending.retry["number"], run.ending.retry["of"], run.ending.retry["after"]) == (1, 4, 30)
