"""`awf runs` keeps the summaries of runs that have ended in the run root's .cache, and uses one
only while the run's files are the ones it was made from: an append, a hand edit of the same
size, a new event or a damaged cache all make it read the log again, and it never keeps a run
whose process may be alive."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from conftest import AWF, Project, finish, wait_until

FLOW = """
import asyncio
from pathlib import Path

import awf


@awf.workflow(name="job", version="1.0.0", prepare=lambda argv: {"how": argv[0] if argv else "complete"})
async def job(wf, how):
    async def work():
        if how == "stop":
            wf.stop("no answer")
        if how == "wait":
            Path("ready").touch()
            while not Path("go").exists():
                await asyncio.sleep(0.02)
        return "done"

    return await wf.stage("work", work, result={"type": "string"})
"""

PARKED = """
import awf


@awf.workflow(name="inbox", version="1.0.0", events={"ci": None, "note": None})
async def inbox(wf):
    async def wait():
        return (await wf.events.receive("ci")).value

    return await wf.stage("wait", wait)
"""


def cache(project: Project) -> dict:
    return json.loads((project.path / ".awf" / "runs" / ".cache" / "summaries.json").read_text())["runs"]


def listing(project: Project) -> dict[str, dict]:
    result = project.awf("runs", "--json")
    assert result.code == 0, result.stderr
    return {f"{run['workflow']}/{run['id']}": run for run in result.out["runs"]}


def logs_opened(project: Project, tmp_path: Path) -> list[str]:
    trace = tmp_path / "trace"
    subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=openat", "-o", str(trace), *AWF, "runs"],
        cwd=project.path,
        env=project.env,
        capture_output=True,
        check=True,
    )
    return [line for line in trace.read_text().splitlines() if "run.jsonl" in line]


def test_a_second_listing_reads_no_log_of_an_ended_run_and_says_the_same(project: Project, tmp_path: Path):
    project.write("job.py", FLOW)
    project.write("inbox.py", PARKED)
    assert project.awf("run", "job.py", "--id", "done").code == 0
    assert project.awf("run", "job.py", "--id", "stopped", "--", "stop").code == 3
    assert project.awf("run", "inbox.py", "--id", "parked").code == 0
    first = project.awf("runs", "--json")
    assert sorted(cache(project)) == ["inbox/parked", "job/done", "job/stopped"]
    assert logs_opened(project, tmp_path) == []
    second = project.awf("runs", "--json")
    assert second.stdout == first.stdout


def test_an_appended_line_a_same_size_edit_and_a_new_event_are_read_again(project: Project, tmp_path: Path):
    project.write("job.py", FLOW)
    project.write("inbox.py", PARKED)
    assert project.awf("run", "job.py", "--id", "stopped", "--", "stop").code == 3
    assert project.awf("run", "inbox.py", "--id", "parked").code == 0
    assert listing(project)["job/stopped"]["attempts"] == 1
    assert project.awf("run", "job.py", "--id", "stopped", "--continue", "--", "stop").code == 3
    assert listing(project)["job/stopped"]["attempts"] == 2
    # The inbox counts in the summary of a run with events: an event that wakes nothing, and so
    # changes no line of the log, is counted at once.
    assert listing(project)["inbox/parked"]["queued"] == 0
    sent = project.awf("send", "inbox/parked", "note", "--data", '"later"')
    assert sent.code == 0, sent.stderr
    assert listing(project)["inbox/parked"]["queued"] == 1
    # A hand edit that keeps the log's size and even its modification time is read again, and its
    # damage named, as on a listing that keeps nothing.
    log = project.path / ".awf" / "runs" / "job" / "stopped" / "run.jsonl"
    stat = log.stat()
    log.write_text(log.read_text().replace('"outcome": "stopped"', '"outcome": "stoppxd"'))
    os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert log.stat().st_size == stat.st_size
    damaged = project.awf("runs")
    assert damaged.code == 3 and "run.jsonl" in damaged.stderr, damaged.stderr


def test_a_run_that_may_be_alive_is_never_kept(project: Project):
    project.write("job.py", FLOW)
    attempt = project.start("run", "job.py", "--id", "live", "--", "wait")
    wait_until(lambda: (project.path / "ready").exists(), "the attempt waits in its stage")
    assert listing(project)["job/live"]["status"] == "running"
    kept = project.path / ".awf" / "runs" / ".cache" / "summaries.json"
    assert not kept.exists() or "job/live" not in cache(project)
    (project.path / "go").touch()
    assert finish(attempt).code == 0
    assert listing(project)["job/live"]["status"] == "completed"
    assert "job/live" in cache(project)


def test_a_damaged_or_foreign_cache_is_read_past_and_made_again(project: Project):
    project.write("job.py", FLOW)
    assert project.awf("run", "job.py", "--id", "done").code == 0
    before = project.awf("runs", "--json").stdout
    kept = project.path / ".awf" / "runs" / ".cache" / "summaries.json"
    for text in ("{not json", '{"format": 999, "runs": {}}', '{"format": 1, "runs": {"job/done": {"log": 1}}}'):
        kept.write_text(text)
        again = project.awf("runs", "--json")
        assert again.code == 0 and again.stdout == before, again.stderr
        assert "job/done" in cache(project)
    # A summary kept with a wrong field is not believed either.
    data = json.loads(kept.read_text())
    data["runs"]["job/done"]["summary"]["nonsense"] = 1
    kept.write_text(json.dumps(data))
    assert project.awf("runs", "--json").stdout == before


def test_a_removed_run_leaves_the_cache_and_a_filtered_listing_keeps_the_others(project: Project):
    project.write("job.py", FLOW)
    project.write("inbox.py", PARKED)
    assert project.awf("run", "job.py", "--id", "one").code == 0
    assert project.awf("run", "job.py", "--id", "two").code == 0
    assert project.awf("run", "inbox.py", "--id", "parked").code == 0
    project.awf("runs")
    assert project.awf("runs", "job").code == 0
    assert sorted(cache(project)) == ["inbox/parked", "job/one", "job/two"]
    import shutil

    shutil.rmtree(project.path / ".awf" / "runs" / "job" / "two")
    time.sleep(0.01)
    assert sorted(listing(project)) == ["inbox/parked", "job/one"]
    assert sorted(cache(project)) == ["inbox/parked", "job/one"]
