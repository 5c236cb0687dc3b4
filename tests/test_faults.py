"""The fault-injection suite: awf killed, and failed with ENOSPC and EIO, at its write points.

Each test takes one way an attempt starts (a new run, a plain continue, a --from-stage redo, a
start part-way with --values), finds its write points by running it once under strace, and then
runs it again for each point with that one system call hit: a SIGKILL at its entry, or an error.
After each: `awf runs` and `awf logs` read the run, every file fits its schema, and the same
command (or one continue) completes, with every stage that ended before the fault reused.

A syscall with a few calls is hit at each; one with more at an evenly spread sample
(AWF_FAULTS_ALL=1 hits every one). Each test records its figures; the session prints them.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest
from conftest import Project
from faults_support import PATH_CALLS, WRITE_CALLS, awf, fits_its_schemas, inject, no_traceback, spread, trace
from workflows import COUNTED

pytestmark = pytest.mark.faults

STAGES = (".x", "b", "c")
EVERY = os.environ.get("AWF_FAULTS_ALL") == "1"
# Of a syscall with more write points than this, an evenly spread sample is hit.
SAMPLE = {"signal=SIGKILL": 3, "error=ENOSPC": 2, "error=EIO": 2}
# The calls an I/O error is injected into: every write, fsync and rename.
ERROR_CALLS = ("write", "fsync", "rename")

NEW = ["run", "counted.py", "--id", "r"]
CONTINUE = [*NEW, "--continue"]
REDO = [*CONTINUE, "--from-stage", "b"]
VALUES = [*CONTINUE, "--from-stage", "c", "--values", "values.json"]


def prepare(project: Project, scenario: str) -> list[str]:
    """Bring the project to where the faulted command starts; return that command."""
    if scenario == "new":
        return NEW
    if scenario == "continue":
        (project.path / "stop-b").touch()
        assert project.awf(*NEW).code == 3
        (project.path / "stop-b").unlink()
        return CONTINUE
    if scenario == "redo":
        assert project.awf(*NEW).code == 0
        return REDO
    assert project.awf(*NEW, "--from-stage", "c").code == 3
    project.write("values.json", json.dumps({".x": "x by hand", "b": "b by hand"}))
    return VALUES


def counts(project: Project) -> Counter[str]:
    side = project.path / "ran.txt"
    return Counter(side.read_text().splitlines() if side.exists() else [])


def log_of(project: Project) -> list[dict]:
    log = project.run_dir("counted", "r") / "run.jsonl"
    if not log.exists():
        return []
    entries = []
    for raw in log.read_bytes().splitlines():
        try:
            entries.append(json.loads(raw))
        except ValueError:
            continue
    return entries


def status(project: Project) -> str | None:
    shown = project.awf("runs", "counted/r", "--json")
    return json.loads(shown.stdout)["status"] if shown.code == 0 else None


class Suite:
    """One scenario's faults, run one at a time in one folder put back between them."""

    def __init__(self, project: Project, scenario: str, tmp_path: Path) -> None:
        self.project = project
        self.scenario = scenario
        self.work = project.path
        self.template = tmp_path.parent / f"{tmp_path.name}-template"
        project.write("counted.py", COUNTED)
        self.argv = prepare(project, scenario)
        shutil.copytree(self.work, self.template, symlinks=True)
        self.before = counts(project)
        self.before_lines = len(log_of(project))
        _, self.calls = trace(self.argv, self.work, project.env, tmp_path.parent / f"{tmp_path.name}.trace")
        self.root = self.work / ".awf" / "runs"

    def restore(self) -> None:
        shutil.rmtree(self.work)
        shutil.copytree(self.template, self.work, symlinks=True)

    def points(self, name: str, fault: str) -> list[int]:
        if name in PATH_CALLS or name in ERROR_CALLS:
            found = [call.nth for call in self.calls if call.name == name and str(self.root) in call.text]
        else:
            found = [call.nth for call in self.calls if call.name == name]
        if not found and name in ("fsync", "fdatasync", "pwrite64"):
            found = [call.nth for call in self.calls if call.name == name]
        return found if EVERY else spread(found, SAMPLE[fault])

    def hit(self, name: str, nth: int, fault: str) -> str:
        """Run the command with one fault; check what is left and that it goes on. Returns how
        the faulted attempt went: crashed, failed (an error it reported), or missed."""
        self.restore()
        project = self.project
        faulted = inject(self.argv, self.work, project.env, name, nth, fault)
        where = f"{self.scenario}: {name} #{nth} {fault}"
        assert no_traceback(faulted), f"{where}\n{faulted.stderr}"
        if fault.startswith("signal"):
            how = "crashed" if faulted.code in (-9, 137) else "missed"
        else:
            how = "failed" if faulted.code == 1 else "missed"
            if how == "failed":
                said = [line for line in faulted.stderr.splitlines() if line.startswith("awf: ")]
                assert said and "cannot be written" in said[-1], f"{where}\n{faulted.stderr}"
            else:
                assert faulted.code in (0, 3), f"{where}: exit {faulted.code}\n{faulted.stderr}"
        crash_lines = log_of(project)[self.before_lines :]
        ended = {
            entry["stage"]
            for entry in crash_lines
            if entry.get("kind") == "stage" and entry["record"]["outcome"] == "succeeded"
        }
        run_dir = project.run_dir("counted", "r")
        if (run_dir / "run.jsonl").exists():
            for argv in (["runs"], ["runs", "counted/r"], ["logs", "counted/r"]):
                read = awf(argv, self.work, project.env)
                assert read.code == 0 and no_traceback(read), f"{where}: awf {' '.join(argv)}\n{read.stderr}"
            assert not fits_its_schemas(run_dir), f"{where}: {fits_its_schemas(run_dir)}"
        self.go_on(where, reached=any(entry.get("kind") == "start-point" for entry in crash_lines))
        ran = counts(project) - self.before
        assert all(ran[stage] <= 2 for stage in STAGES), f"{where}: {ran}"
        assert sum(1 for stage in STAGES if ran[stage] == 2) <= 1, f"{where}: more than one stage ran twice: {ran}"
        for stage in ended:
            assert ran[stage] <= 1, f"{where}: {stage} ended before the fault and ran again: {ran}"
        assert not fits_its_schemas(run_dir), f"{where}: {fits_its_schemas(run_dir)}"
        return how

    def go_on(self, where: str, reached: bool) -> None:
        """The same command for a run that is not there, else one continue, completes.

        `reached`: the faulted attempt got to its start point, so its --values are recorded.
        """
        project = self.project
        if not (project.run_dir("counted", "r") / "run.jsonl").exists():
            argv = self.argv
        elif status(project) == "completed":
            return
        elif self.scenario == "values" and not reached:
            argv = self.argv  # a continue does not carry --values: the same command goes on
        else:
            argv = CONTINUE
        again = awf(argv, self.work, project.env)
        assert again.code == 0, f"{where}: going on with {' '.join(argv)} exited {again.code}\n{again.stderr}"


def record_figures(request: pytest.FixtureRequest, key: str, figures: dict) -> None:
    folder = request.config.cache.mkdir("awf-faults")
    (folder / f"{key}.json").write_text(json.dumps(figures))


@pytest.mark.parametrize("scenario", ["new", "continue", "redo", "values"])
def test_a_crash_at_any_write_point_loses_nothing_that_ended(
    project: Project, tmp_path: Path, request: pytest.FixtureRequest, scenario: str
):
    suite = Suite(project, scenario, tmp_path)
    tally: Counter[str] = Counter()
    for name in WRITE_CALLS:
        for nth in suite.points(name, "signal=SIGKILL"):
            tally[suite.hit(name, nth, "signal=SIGKILL")] += 1
    assert tally["crashed"] > 0
    record_figures(request, f"crash-{scenario}", {"kind": "crash points", **tally})


@pytest.mark.parametrize("error", ["ENOSPC", "EIO"])
@pytest.mark.parametrize("scenario", ["new", "continue", "redo", "values"])
def test_an_io_error_at_any_write_point_is_one_awf_line_and_loses_nothing_that_ended(
    project: Project, tmp_path: Path, request: pytest.FixtureRequest, scenario: str, error: str
):
    suite = Suite(project, scenario, tmp_path)
    tally: Counter[str] = Counter()
    for name in ERROR_CALLS:
        for nth in suite.points(name, f"error={error}"):
            tally[suite.hit(name, nth, f"error={error}")] += 1
    assert tally["failed"] > 0
    record_figures(request, f"{error}-{scenario}", {"kind": f"I/O errors ({error})", **tally})
