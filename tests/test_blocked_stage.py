"""A signal or a deadline is honoured while a stage's work blocks the event loop: the stage is cut
short within a second and recorded failed, and no stage is entered after it."""

from __future__ import annotations

import signal

import pytest
from conftest import Project, finish
from workflows import BLOCKING


@pytest.fixture
def blocking(project: Project) -> Project:
    project.write("blocking.py", BLOCKING)
    return project


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_cuts_short_a_stage_blocked_in_time_sleep_and_no_stage_is_entered_after_it(
    blocking: Project, number: int
):
    (blocking.path / "seconds").write_text("3600")  # were it not cut short, the test would time out
    process = blocking.start("run", "blocking.py", "--id", "r", "--json")
    blocking.wait_for(blocking.path / "in-block")
    process.send_signal(number)
    done = finish(process, timeout=120)
    assert done.code == 128 + number, done.stderr
    record = blocking.stage("blocking", "r", "block")
    assert record["outcome"] == "failed" and "cancelled by" in record["reason"]
    assert done.out["outcome"] == "cancelled" and done.out["stage"] == "block"
    assert not (blocking.path / "entered-next").exists()
    assert "Traceback" not in done.stderr


def test_a_deadline_cuts_short_a_stage_blocked_in_time_sleep(blocking: Project):
    (blocking.path / "seconds").write_text("3600")  # were it not cut short, the test would time out
    done = blocking.awf("run", "blocking.py", "--id", "r", "--timeout", "2s", "--json", timeout=120)
    assert done.code == 1 and done.out["outcome"] == "timed-out", done.stderr
    assert blocking.stage("blocking", "r", "block")["outcome"] == "failed"
    assert not (blocking.path / "entered-next").exists()


def test_a_continue_after_a_cut_short_stage_runs_it_and_the_rest(blocking: Project):
    (blocking.path / "seconds").write_text("3600")  # were it not cut short, the test would time out
    assert blocking.awf("run", "blocking.py", "--id", "r", "--timeout", "1s", timeout=120).code == 1
    (blocking.path / "seconds").write_text("0")
    again = blocking.awf("run", "blocking.py", "--id", "r", "--continue")
    assert again.code == 0, again.stderr
    assert (blocking.path / "entered-next").exists()
