"""The record's readers: a torn last line is skipped, anything else unreadable names its file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from awf.record import folder
from awf.record.errors import RecordError
from awf.record.files import append_line, write_json
from awf.record.layout import RunPaths
from awf.record.log import read_entries, set_torn_tail_aside


def line(kind: str = "log", **fields: object) -> dict[str, object]:
    return {"version": 1, "kind": kind, "at": "2026-01-01T00:00:00+00:00", "attempt": 1, "message": "m", **fields}


def test_a_torn_last_line_is_skipped(tmp_path: Path):
    log = tmp_path / "run.jsonl"
    append_line(log, line())
    with open(log, "a") as handle:
        handle.write('{"version": 1, "kind": "lo')
    assert read_entries(log) == [line()]


def test_a_torn_line_is_set_aside_as_text_before_the_next_append(tmp_path: Path):
    log = tmp_path / "run.jsonl"
    append_line(log, line())
    with open(log, "a") as handle:
        handle.write('{"half')
    assert set_torn_tail_aside(log, line("torn"))
    append_line(log, line(message="after"))
    entries = read_entries(log)
    assert [entry["kind"] for entry in entries] == ["log", "torn", "log"]
    assert entries[1]["text"] == '{"half'


def test_a_torn_line_longer_than_a_read_block_is_set_aside_whole(tmp_path: Path):
    log = tmp_path / "run.jsonl"
    append_line(log, line())
    half = '{"text": "' + "x" * 200_000
    with open(log, "a") as handle:
        handle.write(half)
    assert set_torn_tail_aside(log, line("torn"))
    append_line(log, line(message="after"))
    entries = read_entries(log)
    assert [entry["kind"] for entry in entries] == ["log", "torn", "log"]
    assert entries[1]["text"] == half


def test_a_file_that_is_one_torn_line_is_set_aside_whole(tmp_path: Path):
    log = tmp_path / "run.jsonl"
    log.write_text('{"half')
    assert set_torn_tail_aside(log, line("torn"))
    assert [entry["text"] for entry in read_entries(log)] == ['{"half']
    assert not set_torn_tail_aside(log, line("torn"))


def test_a_line_that_is_not_json_anywhere_is_passed_over_as_a_torn_line_shown_with_its_text(tmp_path: Path):
    log = tmp_path / "run.jsonl"
    append_line(log, line())
    with open(log, "a") as handle:
        handle.write('{"version": 1, "kind": "log", "at": "2026-01-01T00:00:00+00:00", "att\n')
    append_line(log, line(message="after"))
    entries = read_entries(log)
    assert [entry["kind"] for entry in entries] == ["log", "torn", "log"]
    assert entries[1]["text"].endswith('"att') and entries[1]["at"] == line()["at"]
    assert entries[2]["message"] == "after"


def test_a_line_of_an_unknown_format_version_asks_for_a_newer_awf(tmp_path: Path):
    log = tmp_path / "run.jsonl"
    append_line(log, line(version=7))
    with pytest.raises(RecordError, match=r"(?s)format version 7.*upgrade awf"):
        read_entries(log)


def test_a_line_that_does_not_fit_its_schema_is_an_error(tmp_path: Path):
    log = tmp_path / "run.jsonl"
    append_line(
        log, {"version": 1, "kind": "attempt-end", "at": "x", "attempt": 1, "outcome": "exploded", "exit_code": 1}
    )
    with pytest.raises(RecordError, match=r"log-entry\.schema\.json"):
        read_entries(log)


def test_a_stage_file_that_does_not_parse_is_an_error_for_that_stage_only(tmp_path: Path):
    paths = RunPaths(tmp_path, "w", "1")
    paths.stages.mkdir(parents=True)
    (paths.stages / "plan.json").write_text("{not json")
    write_json(
        paths.stage("build"),
        {"version": 1, "stage": "build", "outcome": "succeeded", "origin": "ran", "attempt": 1, "value": None},
    )
    records = folder.read_stage_records(paths)
    assert isinstance(records["plan"], RecordError) and "plan.json" in str(records["plan"])
    assert records["build"]["outcome"] == "succeeded"


def test_a_stage_file_named_for_another_stage_is_an_error(tmp_path: Path):
    paths = RunPaths(tmp_path, "w", "1")
    paths.stages.mkdir(parents=True)
    write_json(
        paths.stage("plan"), {"version": 1, "stage": "build", "outcome": "succeeded", "origin": "ran", "attempt": 1}
    )
    assert isinstance(folder.read_stage_records(paths)["plan"], RecordError)


def test_files_are_private_and_written_whole(tmp_path: Path):
    target = tmp_path / "out.json"
    write_json(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["out.json"]


def test_every_folder_made_for_the_record_is_private(tmp_path: Path):
    from awf.record.files import ensure_dir

    ensure_dir(tmp_path / "a" / "b" / "c")
    for made in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700, made
    ensure_dir(tmp_path / "a" / "b" / "c")  # again: nothing to do
