"""`awf cancel`, `awf run --on ray` without Ray, and liveness read from the attempt lock, on one machine."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from conftest import Project

HANGS = """
import asyncio
from pathlib import Path
import awf

@awf.workflow(name="hangs", description="One stage that waits.")
async def hangs(wf):
    await wf.stage("first", lambda: 1, result={"type": "integer"})
    async def wait():
        Path("in-wait").touch()
        await asyncio.sleep(600)
    await wf.stage("wait", wait)
"""


def test_awf_cancel_ends_a_local_attempt_cancelled_and_says_so(project: Project) -> None:
    project.write("hangs.py", HANGS)
    process = project.start("run", "hangs.py", "--id", "h1")
    project.wait_for(project.path / "in-wait")
    cancelled = project.awf("cancel", "hangs/h1")
    assert cancelled.code == 0, cancelled.stderr
    assert f"sent SIGTERM to attempt 1 of hangs/h1 (pid {process.pid}); it ends cancelled" in cancelled.stderr
    assert process.wait(timeout=60) == 128 + 15
    ends = [e for e in project.log("hangs", "h1") if e["kind"] in ("cancel", "attempt-end")]
    assert [e["kind"] for e in ends] == ["cancel", "attempt-end"]
    assert ends[0]["sent"] is True and ends[1]["outcome"] == "cancelled" and ends[1]["stage"] == "wait"


def test_awf_cancel_of_a_run_with_no_live_attempt_exits_1_and_names_its_status(project: Project) -> None:
    project.write("hangs.py", HANGS.replace("await asyncio.sleep(600)", "pass"))
    assert project.awf("run", "hangs.py", "--id", "h2").code == 0
    said = project.awf("cancel", "hangs/h2")
    assert said.code == 1
    assert said.stderr == "awf: run hangs/h2 has no attempt running (it is completed); there is nothing to cancel\n"
    assert project.awf("cancel", "hangs/nope").code == 1
    assert project.awf("cancel", "Not/A/Name").code == 2


def test_on_ray_without_ray_installed_is_refused_with_what_to_install_and_records_nothing(project: Project) -> None:
    project.write("hangs.py", HANGS)
    hidden = project.path / "no-ray"
    (hidden / "ray").mkdir(parents=True)
    (hidden / "ray" / "__init__.py").write_text("raise ImportError('no ray here')\n")
    said = project.awf("run", "hangs.py", "--id", "r1", "--on", "ray", env={"PYTHONPATH": str(hidden)})
    assert said.code == 2
    assert said.stderr == "awf: --on ray needs Ray, which is not installed: pip install 'awf[ray]'\n"
    assert not (project.path / ".awf" / "runs" / "hangs").exists()


def test_ray_flags_without_on_ray_and_an_unknown_place_are_refused(project: Project) -> None:
    project.write("hangs.py", HANGS)
    assert project.awf("run", "hangs.py", "--wait").stderr == "awf: --wait go only with --on ray\n"
    unknown = project.awf("run", "hangs.py", "--on", "k8s")
    assert unknown.code == 2 and "--on k8s" in unknown.stderr
    bad = project.awf("run", "hangs.py", "--on", "ray", "--ray-resources", "[1]")
    assert bad.code == 2 and "--ray-resources must be a JSON object" in bad.stderr


def test_an_attempt_on_another_machine_reads_running_while_its_lock_is_held_and_interrupted_after(
    project: Project,
) -> None:
    """A pid means nothing on another machine: the attempt lock on the shared storage answers."""
    project.write("hangs.py", HANGS.replace("await asyncio.sleep(600)", "pass"))
    assert project.awf("run", "hangs.py", "--id", "x1").code == 0
    run = project.run_dir("hangs", "x1")
    elsewhere = {
        "version": 1,
        "kind": "attempt-start",
        "at": "2026-12-01T10:00:00.000+00:00",
        "attempt": 2,
        "pid": 4242,
        "process_start": "0000-another-boot:123",
        "host": "node-7",
        "flags": {"continue": True},
    }
    with open(run / "run.jsonl", "a") as log:
        log.write(json.dumps(elsewhere) + "\n")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from filelock import FileLock; "
            "held = FileLock(sys.argv[1]); held.acquire(); print('held', flush=True); time.sleep(600)",
            str(run / "attempt.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        listed = project.awf("runs", "--json")
        assert [row["status"] for row in listed.out["runs"]] == ["running"]
        assert project.awf("runs", "hangs/x1", "--json").out["status"] == "running"
        refused = project.awf("run", "hangs.py", "--id", "x1", "--continue")
        assert refused.code == 2
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 10
    while project.awf("runs", "--json").out["runs"][0]["status"] != "interrupted":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert project.awf("runs", "hangs/x1", "--json").out["status"] == "interrupted"
