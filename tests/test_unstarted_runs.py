"""A new run killed after its folder is made and before its first attempt starts: the same
command, run again, starts it, with the --from-stage and --values it was given."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import Project
from faults_support import fits_its_schemas, inject, no_traceback, trace

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace: apt-get install strace")

TWO = """
from pathlib import Path

import awf

async def one():
    with open("ran-a", "a") as handle:
        handle.write("a\\n")
    return 1

async def two():
    return 2

@awf.workflow(name="w")
async def flow(wf):
    a = await wf.stage("a", one, result={"type": "integer"})
    return a + await wf.stage("b", two, result={"type": "integer"})
"""

START_AT_B = ["run", "wf.py", "--id", "r", "--from-stage", "b", "--values", "vals.json", "--json"]
# The write of the first attempt's `attempt-start` line, as strace prints it.
ATTEMPT_START = '\\"kind\\": \\"attempt-start\\"'


def _killed_before_its_first_attempt(project: Project, scratch: Path) -> None:
    """Start run w/r at stage b with values, and kill -9 it at the write of its attempt-start line:
    its folder and run line are made, its first attempt never started."""
    project.write("wf.py", TWO)
    project.write("vals.json", '{"a": 40}')
    # Traced on a copy, so the crash is injected into a project where the run does not exist yet.
    copy = scratch / "traced"
    shutil.copytree(project.path, copy)
    _, calls = trace(START_AT_B, copy, project.env, scratch / "strace.out")
    hits = [call.nth for call in calls if call.name == "write" and ATTEMPT_START in call.text]
    assert hits, "the traced run wrote no attempt-start line"
    killed = inject(START_AT_B, project.path, project.env, "write", hits[0], "signal=SIGKILL")
    assert killed.code in (-9, 137), killed.stderr
    kinds = [line["kind"] for line in project.log("w", "r")]
    assert kinds == ["run"], kinds  # killed at the point meant: the run made, no attempt started


def test_the_same_command_run_again_starts_the_run_with_its_values(project: Project, tmp_path: Path):
    _killed_before_its_first_attempt(project, tmp_path / "scratch")
    again = project.awf(*START_AT_B)
    assert again.code == 0 and no_traceback(again), again.stderr
    assert again.out["value"] == 42  # a given by --values, b run
    assert not (project.path / "ran-a").exists()  # stage a's work never ran
    assert project.stage("w", "r", "a")["origin"] == "provided"  # type: ignore[index]
    starts = [line for line in project.log("w", "r") if line["kind"] == "attempt-start"]
    assert [line["attempt"] for line in starts] == [1]
    assert starts[0]["flags"]["from_stage"] == "b" and not starts[0]["flags"].get("continue")
    assert not fits_its_schemas(project.run_dir("w", "r"))


def test_another_new_run_command_on_the_unstarted_run_is_refused_as_before(project: Project, tmp_path: Path):
    _killed_before_its_first_attempt(project, tmp_path / "scratch")
    other = project.awf("run", "wf.py", "--id", "r", "--share-folder")
    assert other.code == 2, other.stderr
    assert other.stderr == "awf: run w/r exists; continue it with --id r --continue, or pick another id\n"
    assert [line["kind"] for line in project.log("w", "r")] == ["run"]
    again = project.awf(*START_AT_B)
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout)["value"] == 42


def test_a_run_that_started_its_first_attempt_is_still_refused_to_a_new_run_command(project: Project):
    project.write("wf.py", TWO)
    project.write("vals.json", '{"a": 40}')
    assert project.awf(*START_AT_B).code == 0
    again = project.awf(*START_AT_B)
    assert again.code == 2
    assert again.stderr == "awf: run w/r exists; continue it with --id r --continue, or pick another id\n"
