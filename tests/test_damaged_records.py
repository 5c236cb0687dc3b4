"""Damaged records, one case each: what fuzzing a real run's files found (tests/test_fuzzed_records.py),
kept as plain tests. Each command exits with its documented code, names the file that cannot be
read, prints no traceback, and a command that reads or refuses changes no file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import Project, Result
from faults_support import no_traceback
from workflows import COUNTED, PARKED


@pytest.fixture
def counted(project: Project) -> Project:
    project.write("counted.py", COUNTED)
    return project


@pytest.fixture
def parked(project: Project) -> Project:
    """A run parked/p, parked after its stage open, with an event in its inbox no wait takes."""
    project.write("parked.py", PARKED)
    assert project.awf("run", "parked.py", "--id", "p").code == 0
    assert project.awf("send", "parked/p", "note", "--data", '"hi"', "--no-wake").code == 0
    return project


def files_of(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(path.relative_to(folder)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def awf_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("awf: ")]


def refused_naming(result: Result, file: Path, code: int = 3) -> bool:
    return result.code == code and no_traceback(result) and bool(awf_lines(result)) and str(file) in result.stderr


def test_a_continue_of_a_completed_run_names_each_stage_record_it_cannot_read(counted: Project):
    assert counted.awf("run", "counted.py", "--id", "done").code == 0
    stage = counted.run_dir("counted", "done") / "stages" / "c.json"
    stage.write_text("")
    refused = counted.awf("run", "counted.py", "--id", "done", "--continue")
    assert refused.code == 2 and no_traceback(refused)
    assert f"its record {stage} is not JSON" in refused.stderr, refused.stderr


def test_an_inbox_that_is_a_folder_is_named_by_every_reader_and_refuses_a_continue(parked: Project):
    folder = parked.run_dir("parked", "p")
    inbox = folder / "events.jsonl"
    inbox.unlink()
    inbox.mkdir()
    before = files_of(parked.path / ".awf")
    for argv in (["runs"], ["runs", "parked/p"], ["logs", "parked/p"]):
        assert refused_naming(parked.awf(*argv), inbox), argv
    for argv in (["--plan"], []):
        result = parked.awf("run", "parked.py", "--id", "p", "--continue", *argv)
        assert refused_naming(result, inbox), result.stderr
        assert "it is a folder, not a file" in result.stderr
    assert files_of(parked.path / ".awf") == before


@pytest.mark.parametrize("field, value", [("id", 5), ("name", None), ("sent", []), ("version", 2)])
def test_an_inbox_line_that_is_not_an_event_is_named_with_its_byte_and_refuses_a_continue(
    parked: Project, field: str, value: object
):
    inbox = parked.run_dir("parked", "p") / "events.jsonl"
    event = json.loads(inbox.read_text())
    event[field] = value
    inbox.write_text(json.dumps(event) + "\n")
    before = files_of(parked.path / ".awf")
    for argv in (["runs", "parked/p"], ["logs", "parked/p"]):
        assert refused_naming(parked.awf(*argv), inbox), argv
    refused = parked.awf("run", "parked.py", "--id", "p", "--continue")
    assert refused_naming(refused, inbox), refused.stderr
    assert "the line at byte 0" in refused.stderr
    assert files_of(parked.path / ".awf") == before


def test_a_continue_of_a_run_whose_log_has_a_line_that_does_not_fit_exits_3_naming_it_and_changes_nothing(
    counted: Project,
):
    (counted.path / "stop-b").touch()
    assert counted.awf("run", "counted.py", "--id", "stopped").code == 3
    log = counted.run_dir("counted", "stopped") / "run.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    entry = json.loads(lines[1])
    entry["attempt"] = "one"
    lines[1] = json.dumps(entry) + "\n"
    log.write_text("".join(lines))
    before = files_of(counted.path / ".awf")
    for argv in (["--plan"], []):
        result = counted.awf("run", "counted.py", "--id", "stopped", "--continue", *argv)
        assert refused_naming(result, log), result.stderr
        assert len(awf_lines(result)) == 1 and "the run's record cannot be read" in result.stderr
    assert files_of(counted.path / ".awf") == before


def test_a_log_cut_inside_its_run_line_is_named_and_neither_plan_nor_continue_sets_its_half_line_aside(
    counted: Project,
):
    (counted.path / "stop-b").touch()
    assert counted.awf("run", "counted.py", "--id", "stopped").code == 3
    log = counted.run_dir("counted", "stopped") / "run.jsonl"
    log.write_bytes(log.read_bytes()[:40])
    before = files_of(counted.path / ".awf")
    for argv in (["--plan"], []):
        result = counted.awf("run", "counted.py", "--id", "stopped", "--continue", *argv)
        assert refused_naming(result, log), result.stderr
        assert "has no 'run' line" in result.stderr
    assert files_of(counted.path / ".awf") == before


@pytest.mark.parametrize("lock", ["attempt.lock", "events.lock"])
def test_a_folder_where_a_lock_file_goes_is_named_by_the_command_that_takes_it(parked: Project, lock: str):
    where = parked.run_dir("parked", "p") / lock
    where.unlink()
    where.mkdir()
    before = files_of(parked.path / ".awf")
    if lock == "attempt.lock":
        refused = parked.awf("run", "parked.py", "--id", "p", "--continue")
    else:
        refused = parked.awf("send", "parked/p", "ci", "--data", "{}")
    assert refused_naming(refused, where), refused.stderr
    assert "cannot be locked: it is a folder, not a file" in refused.stderr
    assert "remove it: awf makes it again" in refused.stderr
    assert files_of(parked.path / ".awf") == before


def test_a_file_where_the_stages_folder_goes_is_named_by_the_readers_and_refuses_a_continue(counted: Project):
    (counted.path / "stop-b").touch()
    assert counted.awf("run", "counted.py", "--id", "stopped").code == 3
    stages = counted.run_dir("counted", "stopped") / "stages"
    shutil.rmtree(stages)
    stages.write_text("")
    before = files_of(counted.path / ".awf")
    for argv in (["runs", "counted/stopped"], ["run", "counted.py", "--id", "stopped", "--continue"]):
        result = counted.awf(*argv)
        assert refused_naming(result, stages), result.stderr
        assert "is a file, not a folder" in result.stderr
    assert files_of(counted.path / ".awf") == before


@pytest.mark.parametrize("waits", [[1], "x", [{"wait": "-/receive:ci#1", "names": "ci"}]])
def test_what_a_parked_run_waits_for_of_the_wrong_type_is_named_by_awf_runs_not_a_traceback(
    parked: Project, waits: object
):
    log = parked.run_dir("parked", "p") / "run.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    end = json.loads(lines[-1])
    assert end["kind"] == "attempt-end"
    end["waits"] = waits
    lines[-1] = json.dumps(end) + "\n"
    log.write_text("".join(lines))
    for argv in (["runs"], ["runs", "parked/p"]):
        shown = parked.awf(*argv)
        assert refused_naming(shown, log), shown.stderr
        assert f"the line at byte {sum(map(len, lines[:-1]))} does not fit" in shown.stderr
