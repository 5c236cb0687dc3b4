"""Edges of the record a crash probe found: refusals that name the holder, a log that cannot be
written, and a fresh run root made durable folder by folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import AWF, Project, finish

HELD = """
import pathlib
import awf

async def held():
    pathlib.Path("started").touch()
    while not pathlib.Path("go").exists():
        import asyncio
        await asyncio.sleep(0.02)

@awf.workflow(name="w")
async def flow(wf):
    await wf.stage("a", held)
"""


def _start_held(project: Project, run_id: str) -> subprocess.Popen[str]:
    project.write("wf.py", HELD)
    process = project.start("run", "wf.py", "--id", run_id)
    project.wait_for(project.path / "started")
    project.wait_for(project.run_dir("w", run_id) / "attempt.pid")
    return process


def test_a_run_held_on_another_boot_is_refused_naming_its_host(project: Project) -> None:
    process = _start_held(project, "r1")
    try:
        pid_file = project.run_dir("w", "r1") / "attempt.pid"
        pid = json.loads(pid_file.read_text())
        pid.update(process_start="another-boot:12345", host="node-7")
        tmp = pid_file.with_name("attempt.pid.edit")
        tmp.write_text(json.dumps(pid))
        os.replace(tmp, pid_file)
        result = project.awf("run", "wf.py", "--id", "r1", "--continue")
        assert result.code == 2, result.stderr
        assert "on host node-7" in result.stderr
        assert "still starting" not in result.stderr
    finally:
        (project.path / "go").touch()
        finish(process)


def test_a_case_clash_with_a_live_run_names_its_attempt_and_pid(project: Project) -> None:
    process = _start_held(project, "r1")
    try:
        result = project.awf("run", "wf.py", "--id", "R1")
        assert result.code == 2, result.stderr
        assert "differ only in case" in result.stderr
        assert f"(pid {process.pid})" in result.stderr
        assert "wait for it to end" in result.stderr
    finally:
        (project.path / "go").touch()
        finish(process)


ONE = """
import awf

async def one():
    return None

@awf.workflow(name="w")
async def flow(wf):
    await wf.stage("a", one)
"""


@pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="needs bubblewrap for a read-only mount: apt-get install bubblewrap"
)
def test_a_log_that_reads_and_cannot_be_written_is_named_as_not_written(project: Project) -> None:
    project.write("wf.py", ONE)
    assert project.awf("run", "wf.py", "--id", "r1").code == 0
    log = str(project.run_dir("w", "r1") / "run.jsonl")
    before = Path(log).read_bytes()
    continue_a = ["run", "wf.py", "--id", "r1", "--continue", "--from-stage", "a"]
    done = subprocess.run(
        ["bwrap", "--dev-bind", "/", "/", "--ro-bind", log, log, *AWF, *continue_a],
        cwd=project.path,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "bwrap:" not in done.stderr, done.stderr  # bubblewrap itself ran
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("awf: ")
    assert "cannot be written: read-only file system" in done.stderr
    assert "cannot be read" not in done.stderr
    assert Path(log).read_bytes() == before


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace: apt-get install strace")
def test_the_first_run_in_a_fresh_folder_fsyncs_each_parent_it_made(project: Project, tmp_path: Path) -> None:
    project.write("wf.py", ONE)
    out = tmp_path / "trace"
    done = subprocess.run(
        ["strace", "-f", "-qq", "-y", "-e", "trace=fsync", "-o", str(out), *AWF, "run", "wf.py", "--id", "r1"],
        cwd=project.path,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    synced = set(re.findall(r"fsync\(\d+<([^>]*)>\)", out.read_text()))
    for folder in (project.path, project.path / ".awf", project.path / ".awf" / "runs"):
        assert str(folder) in synced, f"{folder} was not fsynced: {sorted(synced)}"


REDO = """
import pathlib
import awf

async def one():
    with open("ran-a", "a") as handle:
        handle.write("a\\n")
    return 1

async def two():
    return 2

@awf.workflow(name="w")
async def flow(wf):
    await wf.stage("a", one, result={"type": "integer"})
    await wf.stage("b", two, result={"type": "integer"})
"""


def _crash_redo_at(project: Project, scratch: Path, marker: str) -> None:
    """Run w/r1 to its end, then kill -9 its --from-stage a redo at the write that holds `marker`."""
    from faults_support import inject, trace

    project.write("wf.py", REDO)
    assert project.awf("run", "wf.py", "--id", "r1").code == 0
    redo = ["run", "wf.py", "--id", "r1", "--continue", "--from-stage", "a"]
    # Traced in the run's own folder (a copy elsewhere would be a moved run, and write more), then
    # put back as the first attempt left it, so the crash is injected into that same run.
    kept = scratch / "kept"
    shutil.copytree(project.path, kept, symlinks=True)
    _, calls = trace(redo, project.path, project.env, scratch / "strace.out")
    shutil.rmtree(project.path)
    shutil.copytree(kept, project.path, symlinks=True)
    hits = [c.nth for c in calls if c.name == "write" and marker in c.text]
    assert hits, "the redo wrote no such line"
    killed = inject(redo, project.path, project.env, "write", hits[0], "signal=SIGKILL")
    assert killed.code != 0


@pytest.mark.faults
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace: apt-get install strace")
def test_a_redo_killed_after_its_stage_record_and_before_its_line_reuses_that_record(
    project: Project, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _crash_redo_at(project, tmp_path_factory.mktemp("trace"), '\\"kind\\": \\"stage\\", \\"at')
    ran = (project.path / "ran-a").read_text()
    result = project.awf("run", "wf.py", "--id", "r1", "--continue")
    assert result.code == 0, result.stderr
    assert (project.path / "ran-a").read_text() == ran  # the redo's record of a is reused
    out = json.loads((project.run_dir("w", "r1") / "out.json").read_text())
    assert [[s["stage"], s["how"]] for s in out["stages"]] == [["a", "reused"], ["b", "ran"]]


@pytest.mark.faults
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace: apt-get install strace")
def test_a_redo_killed_inside_its_stage_is_left_to_the_next_continue(
    project: Project, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _crash_redo_at(project, tmp_path_factory.mktemp("trace"), "stages/a.json~")
    result = project.awf("run", "wf.py", "--id", "r1", "--continue")
    assert result.code == 0, result.stderr
    assert "redoes from stage a again" in result.stderr, result.stderr
    out = json.loads((project.run_dir("w", "r1") / "out.json").read_text())
    assert [[s["stage"], s["how"]] for s in out["stages"]] == [["a", "ran"], ["b", "ran"]]
