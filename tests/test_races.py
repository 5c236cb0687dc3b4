"""Races at scale: 50 continues of one run, and 50 new runs of one id, started at once. Exactly
one attempt runs; every other process is refused (exit 2), naming the attempt that holds the run."""

from __future__ import annotations

import subprocess
import time

import pytest
from conftest import AWF, Project
from workflows import COUNTED

pytestmark = pytest.mark.faults

MANY = 50


def start_many(project: Project, argv: list[str]) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            [*AWF, *argv], cwd=project.path, env=project.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(MANY)
    ]


def settle(project: Project, processes: list[subprocess.Popen[str]]) -> tuple[list[str], list[subprocess.Popen[str]]]:
    """Wait until every process but the one that runs has ended; release that one; return the
    others' stderr and the one."""
    deadline = time.monotonic() + 300
    while sum(process.poll() is None for process in processes) > 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    running = [process for process in processes if process.poll() is None]
    (project.path / "hold-b").unlink()
    refused = []
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        if process not in running:
            assert process.returncode == 2, stderr
            refused.append(stderr)
    return refused, running


@pytest.mark.parametrize("how", ["continue", "new"])
def test_of_50_attempts_started_at_once_one_runs_and_the_rest_are_refused_naming_it(
    project: Project, how: str, request: pytest.FixtureRequest
):
    project.write("counted.py", COUNTED)
    argv = ["run", "counted.py", "--id", "r"]
    if how == "continue":
        (project.path / "stop-b").touch()
        assert project.awf(*argv).code == 3
        (project.path / "stop-b").unlink()
        argv = [*argv, "--continue"]
    (project.path / "hold-b").touch()
    refused, running = settle(project, start_many(project, argv))
    assert len(running) == 1 and running[0].returncode == 0
    assert len(refused) == MANY - 1
    assert all(text.startswith("awf: ") and "pid" in text and "Traceback" not in text for text in refused), refused
    assert (project.path / "ran.txt").read_text().splitlines().count("c") == 1
    folder = request.config.cache.mkdir("awf-faults")
    (folder / f"race-{how}.json").write_text(f'{{"kind": "races", "refused": {len(refused)}, "ran": 1}}')
