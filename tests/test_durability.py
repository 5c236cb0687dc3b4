"""Each row of the Durability page's "What survives what" table, through the real CLI."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time

import pytest
from conftest import FAKETIME, Project, finish, needs_faketime
from workflows import THREE


@pytest.fixture
def three(project: Project) -> Project:
    project.write("three.py", THREE)
    return project


def mode(project: Project, stage: str, how: str | None) -> None:
    file = project.path / f"mode-{stage}"
    if how is None:
        file.unlink(missing_ok=True)
    else:
        file.write_text(how)


def ran(project: Project, stage: str, attempt: int) -> bool:
    return (project.path / f"ran-{stage}-{attempt}").exists()


def ending(project: Project, run_id: str = "r1") -> dict:
    return [e for e in project.log("three", run_id) if e["kind"] == "attempt-end"][-1]


def test_a_throw_in_a_stage_fails_and_a_continue_redoes_that_stage_then_the_rest(three: Project):
    mode(three, "implement", "throw")
    first = three.awf("run", "three.py", "--id", "r1")
    assert first.code == 1
    assert "RuntimeError: implement broke" in first.stderr
    assert three.stage("three", "r1", "plan")["outcome"] == "succeeded"
    failed = three.stage("three", "r1", "implement")
    assert failed["outcome"] == "failed" and "implement broke" in failed["reason"]
    assert failed["error"]["type"] == "RuntimeError" and "Traceback" in failed["error"]["traceback"]
    assert "go on:   awf run three.py --id r1 --continue" in first.stderr

    mode(three, "implement", None)
    second = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert second.code == 0, second.stderr
    assert not ran(three, "plan", 2) and ran(three, "implement", 2) and ran(three, "review", 2)
    assert second.out["value"]["plan"] == "plan by attempt 1"
    assert "↺ plan  from attempt 1" in second.stderr


def test_a_stop_inside_a_stage_records_it_stopped_and_a_continue_redoes_it(three: Project):
    mode(three, "implement", "stop")
    first = three.awf("run", "three.py", "--id", "r1", "--json")
    assert first.code == 3
    assert first.out["outcome"] == "stopped" and first.out["stage"] == "implement"
    assert first.out["reason"] == "implement needs a person"
    assert three.stage("three", "r1", "implement")["outcome"] == "stopped"

    mode(three, "implement", None)
    second = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert second.code == 0
    assert ran(three, "implement", 2) and not ran(three, "plan", 2)


def test_a_stop_between_stages_changes_no_record_and_a_continue_checks_again(three: Project):
    (three.path / "stop-between").touch()
    first = three.awf("run", "three.py", "--id", "r1")
    assert first.code == 3
    assert "between stages, after plan" in first.stderr
    assert sorted(p.name for p in (three.run_dir("three", "r1") / "stages").iterdir()) == ["plan.json"]
    before = (three.run_dir("three", "r1") / "stages" / "plan.json").read_text()

    again = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert again.code == 3
    assert (three.run_dir("three", "r1") / "stages" / "plan.json").read_text() == before
    # The check ran again on the reused value, and awf says which stage to redo.
    assert "stopped at this same check" in again.stderr
    assert "--from-stage plan" in again.stderr

    (three.path / "stop-between").unlink()
    done = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert done.code == 0
    assert not ran(three, "plan", 3) and ran(three, "implement", 3)


def test_a_bare_number_to_timeout_is_seconds(three: Project):
    mode(three, "implement", "hang")
    result = three.awf("run", "three.py", "--id", "r1", "--timeout", "1", "--json")
    assert result.code == 1 and result.out["outcome"] == "timed-out"
    assert result.out["reason"].startswith("timed out: --timeout 1s passed (at ")
    assert "--timeout 1s passed" in result.stderr


def test_a_timeout_ends_timed_out_and_a_continue_has_no_deadline(three: Project):
    mode(three, "implement", "hang")
    first = three.awf("run", "three.py", "--id", "r1", "--timeout", "1s", "--json")
    assert first.code == 1
    assert first.out["outcome"] == "timed-out" and first.out["stage"] == "implement"
    # Said as the user gave it, with the time of day it came.
    assert re.fullmatch(r"timed out: --timeout 1s passed \(at \d\d:\d\d:\d\d\)", first.out["reason"])
    record = three.stage("three", "r1", "implement")
    assert record["outcome"] == "failed" and record["reason"] == first.out["reason"]

    mode(three, "implement", None)
    second = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert second.code == 0
    starts = [e for e in three.log("three", "r1") if e["kind"] == "attempt-start"]
    assert starts[0]["deadline"] is not None and starts[1]["deadline"] is None
    assert ran(three, "implement", 2)


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_cancels_records_the_open_stage_failed_and_a_continue_redoes_it(three: Project, number: int):
    mode(three, "implement", "hang")
    process = three.start("run", "three.py", "--id", "r1")
    three.wait_for(three.path / "in-implement")
    os.kill(process.pid, number)
    result = finish(process)
    assert result.code == 128 + number
    assert ending(three)["outcome"] == "cancelled"
    record = three.stage("three", "r1", "implement")
    assert record["outcome"] == "failed" and "cancelled" in record["reason"]
    assert not (three.run_dir("three", "r1") / "attempt.pid").exists()

    mode(three, "implement", None)
    second = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert second.code == 0 and ran(three, "implement", 2) and not ran(three, "plan", 2)


def crash_check(three: Project, second: object) -> None:
    assert not any(e["kind"] == "attempt-end" for e in three.log("three", "r1"))
    # The stage in flight has no record; the one that ended before it does.
    assert three.stage("three", "r1", "implement") is None
    assert three.stage("three", "r1", "plan")["outcome"] == "succeeded"


def test_kill_9_leaves_no_ending_the_run_reads_interrupted_and_the_next_attempt_starts_there(three: Project):
    mode(three, "implement", "hang")
    process = three.start("run", "three.py", "--id", "r1")
    three.wait_for(three.path / "in-implement")
    os.kill(process.pid, signal.SIGKILL)
    finish(process)
    crash_check(three, None)

    mode(three, "implement", None)
    second = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert second.code == 0
    assert "attempt 1 was interrupted in stage implement" in second.stderr
    assert f"pid {process.pid}" in second.stderr
    assert not ran(three, "plan", 2) and ran(three, "implement", 2)


def test_a_crash_after_an_attempt_that_ended_is_named_in_the_stage_it_was_in(three: Project):
    # A continue passes over the stage lines of attempts that ended; a crashed one's it reads.
    mode(three, "implement", "stop")
    assert three.awf("run", "three.py", "--id", "r1").code == 3
    mode(three, "implement", "hang")
    process = three.start("run", "three.py", "--id", "r1", "--continue")
    three.wait_for(three.path / "in-implement")
    os.kill(process.pid, signal.SIGKILL)
    finish(process)

    mode(three, "implement", None)
    third = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert third.code == 0, third.stderr
    assert "attempt 2 was interrupted in stage implement" in third.stderr
    assert "attempt 1 was interrupted" not in third.stderr
    assert not ran(three, "plan", 3) and ran(three, "implement", 3)


def test_a_second_ctrl_c_before_the_attempt_has_ended_is_a_crash(three: Project):
    mode(three, "implement", "slow-cleanup")
    process = three.start("run", "three.py", "--id", "r1")
    three.wait_for(three.path / "in-implement")
    os.kill(process.pid, signal.SIGINT)
    three.wait_for(three.path / "cleaning-implement")
    os.kill(process.pid, signal.SIGINT)
    result = finish(process)
    assert result.code == 130
    crash_check(three, result)
    mode(three, "implement", None)
    second = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert second.code == 0 and "attempt 1 was interrupted in stage implement" in second.stderr


def test_a_code_change_between_attempts_reuses_the_records_as_they_are(three: Project):
    mode(three, "review", "stop")
    assert three.awf("run", "three.py", "--id", "r1").code == 3
    # A reworded prompt, new code between stages: the records still fit, so they are reused.
    source = (three.path / "three.py").read_text()
    three.write(
        "three.py",
        source.replace('"Three stages."', '"Three stages, reworded."').replace(
            "    return {", "    print('new code', file=__import__('sys').stderr)\n    return {"
        ),
    )
    mode(three, "review", None)
    second = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert second.code == 0, second.stderr
    assert "new code" in second.stderr
    assert not ran(three, "plan", 2) and not ran(three, "implement", 2) and ran(three, "review", 2)


def test_the_run_belongs_to_the_workflow_name_so_a_moved_file_continues_it(three: Project):
    mode(three, "review", "stop")
    assert three.awf("run", "three.py", "--id", "r1").code == 3
    (three.path / "elsewhere").mkdir()
    shutil.move(three.path / "three.py", three.path / "elsewhere" / "copy.py")
    mode(three, "review", None)
    second = three.awf("run", "elsewhere/copy.py", "--id", "r1", "--continue")
    assert second.code == 0 and ran(three, "review", 2)


def test_a_continue_of_a_completed_run_is_refused_listing_its_stages(three: Project):
    assert three.awf("run", "three.py", "--id", "r1").code == 0
    refused = three.awf("run", "three.py", "--id", "r1", "--continue")
    assert refused.code == 2
    assert refused.stderr.startswith("awf: run three/r1 completed")
    for stage in ("plan", "implement", "review"):
        assert stage in refused.stderr
    assert "succeeded in attempt 1" in refused.stderr and "ago" in refused.stderr
    assert "--from-stage plan" in refused.stderr
    assert len([e for e in three.log("three", "r1") if e["kind"] == "attempt-start"]) == 1


@needs_faketime
def test_a_clock_jump_past_the_deadline_ends_the_attempt_timed_out(three: Project):
    """A sleeping laptop: the time asleep counts, so the deadline is a time of day."""
    clock = three.path / "clock"
    clock.write_text("+0\n")
    env = {
        "LD_PRELOAD": str(FAKETIME),
        "FAKETIME_TIMESTAMP_FILE": str(clock),
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }
    mode(three, "implement", "hang")
    process = three.start("run", "three.py", "--id", "r1", "--timeout", "1h", "--json", env=env)
    three.wait_for(three.path / "in-implement")
    jumped = time.monotonic()
    clock.write_text("+2h\n")
    result = finish(process, timeout=20)
    assert time.monotonic() - jumped < 5
    assert result.code == 1
    assert json.loads(result.stdout)["outcome"] == "timed-out"
