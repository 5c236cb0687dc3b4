"""wf.status: what a workflow says it is doing, recorded and shown until the next one or the attempt's end."""

from __future__ import annotations

import json
import time

from conftest import Project, finish

FLOW = """
import asyncio
from pathlib import Path

import awf


async def wait_for_ci(wf):
    wf.status("waiting for CI", progress=0.4)
    Path("waiting").touch()
    while not Path("ci-done").exists():
        await asyncio.sleep(0.02)
    wf.status("merging")
    return "merged"


@awf.workflow(name="ci", description="Wait for CI, then merge.", version="1.0.0")
async def ci(wf):
    return await wf.stage("merge", lambda: wait_for_ci(wf), result={"type": "string"})
"""


def wait_for(project: Project, name: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not (project.path / name).exists():
        assert time.monotonic() < deadline, f"{name} never appeared"
        time.sleep(0.02)


def test_a_status_is_recorded_and_shown_while_the_attempt_runs_and_gone_once_it_ends(project: Project):
    project.write("ci.py", FLOW)
    attempt = project.start("run", "ci.py", "--id", "c1")
    wait_for(project, "waiting")
    listing = project.awf("runs")
    assert "running · waiting for CI (40%)" in listing.stdout, listing.stdout
    one = project.awf("runs", "ci/c1")
    assert one.stdout.startswith("ci/c1  running · waiting for CI (40%)"), one.stdout
    data = json.loads(project.awf("runs", "--json").stdout)
    assert data["runs"][0]["wf_status"] == {"text": "waiting for CI", "progress": 0.4}
    (project.path / "ci-done").touch()
    ended = finish(attempt)
    assert ended.code == 0, ended.stderr
    assert "… waiting for CI (40%)" in ended.stderr and "… merging" in ended.stderr
    after = json.loads(project.awf("runs", "--json").stdout)
    assert after["runs"][0]["wf_status"] is None
    assert "waiting for CI" not in project.awf("runs").stdout
    lines = [line for line in project.log("ci", "c1") if line["kind"] == "status"]
    assert [(line["text"], line.get("progress"), line["stage"]) for line in lines] == [
        ("waiting for CI", 0.4, "merge"),
        ("merging", None, "merge"),
    ]
    logs = project.awf("logs", "ci/c1")
    assert "status: waiting for CI (40%)" in logs.stdout and "status: merging" in logs.stdout


def test_awf_watch_shows_the_status(project: Project):
    project.write("ci.py", FLOW)
    attempt = project.start("run", "ci.py", "--id", "c1")
    wait_for(project, "waiting")
    watcher = project.start("watch", "ci/c1")
    time.sleep(0.5)
    (project.path / "ci-done").touch()
    assert finish(attempt).code == 0
    watched = finish(watcher)
    assert watched.code == 0, watched.stderr
    assert "… waiting for CI (40%)" in watched.stderr + watched.stdout


def test_a_status_with_progress_out_of_range_fails_the_stage(project: Project):
    project.write(
        "odd.py",
        """
        import awf

        @awf.workflow(name="odd", description="A status past the end.", version="1.0.0")
        async def odd(wf):
            wf.status("nearly", progress=1.5)
        """,
    )
    result = project.awf("run", "odd.py", "--id", "o1", "--json")
    assert result.code == 1
    assert result.out["reason"] == "wf.status: progress must be a number from 0 to 1, not 1.5"


def test_the_progress_view_shows_the_status_until_the_attempt_ends():
    from awf.view.live import ViewState, render_lines

    state = ViewState(name="ci/c1", attempt=1, started=0.0)
    state.status = "waiting for CI (40%)"
    assert ("  … waiting for CI (40%)", "cyan") in render_lines(state, now=1.0)
    state.ended = 2.0
    assert all("waiting for CI" not in text for text, _ in render_lines(state, now=3.0))
