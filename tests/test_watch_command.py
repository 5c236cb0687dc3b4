"""`awf watch`: the view of a run started elsewhere, driven by its record, ending with its code."""

from __future__ import annotations

import os
import queue
import re
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import Project, Result, finish
from reading_runs import release, run, start_waiting, write_steps
from test_view_live import final_text, on_terminal

from awf.engine.durations import parse_duration
from awf.record.clock import parse_iso


class Lines:
    """A background process's stderr, line by line as it comes, and all of it once it exits."""

    def __init__(self, process) -> None:
        self.process = process
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self._queue.put(line)
        self._queue.put(None)

    def until(self, text: str, timeout: float = 20) -> None:
        while not any(text in line for line in self.seen):
            line = self._queue.get(timeout=timeout)
            if line is None:
                raise AssertionError(f"{text!r} never came: {''.join(self.seen)}")
            self.seen.append(line)

    def finish(self, timeout: float = 30) -> Result:
        self.process.wait(timeout=timeout)
        while (line := self._queue.get(timeout=timeout)) is not None:
            self.seen.append(line)
        return Result(self.process.returncode, self.process.stdout.read(), "".join(self.seen))


@pytest.fixture
def steps(project: Project) -> Project:
    write_steps(project)
    return project


def test_watch_shows_a_live_run_and_exits_with_its_code(steps: Project):
    live = start_waiting(steps, "w1")
    watch = steps.start("watch", "steps/w1")
    lines = Lines(watch)
    lines.until("▸ build")
    assert any(line.startswith("✓ plan") for line in lines.seen)
    assert any("building the wait way" in line for line in lines.seen)
    assert watch.poll() is None
    release(steps, "w1")
    done = lines.finish()
    assert done.code == 0, done.stderr
    text = done.stderr
    assert "✓ build" in text and "✓ review" in text
    assert "✓ steps/w1 completed (attempt 1)" in text
    assert "  totals:  3 stages (3 ran)" in text
    assert finish(live).code == 0


def test_watch_shows_an_agents_turn_by_its_prompts_first_line_as_awf_run_does(project: Project):
    ask = str(Path(__file__).parent / "agents" / "ask.py") + ":ask"
    ready = project.path / "agent.json"
    env = {"NO_LABEL": "1", "NO_RECOVERY": "1"}
    live = project.start("run", ask, "--id", "wl", "--", "waits.py", str(ready), env=env)
    project.wait_for(ready)
    lines = Lines(project.start("watch", "ask/wl"))
    lines.until("  ◦ planner (exec) · Plan a fix for #212.")
    Path(f"{ready}.go").write_text("")
    assert lines.finish().code == 3
    ran = finish(live)
    assert ran.code == 3 and "  ◦ planner (exec) · Plan a fix for #212." in ran.stderr
    # Watched after it ended, the turn shows the same way.
    replayed = project.awf("watch", "ask/wl")
    assert "  ◦ planner (exec) · Plan a fix for #212." in replayed.stderr and "✗ planner unanswered" in replayed.stderr


def test_watch_exits_with_a_stopped_attempts_code(steps: Project):
    live = start_waiting(steps, "w2", "run", "steps.py", "--id", "w2", "--", "wait-stop")
    lines = Lines(steps.start("watch", "steps/w2"))
    lines.until("▸ build")
    release(steps, "w2")
    done = lines.finish()
    assert done.code == 3
    assert "■ steps/w2 stopped in build (attempt 1, exit 3)" in done.stderr
    assert "why:     told to stop after waiting" in done.stderr
    assert "go on:   awf run steps.py --id w2 --continue" in done.stderr
    assert finish(live).code == 3


def test_watch_of_a_cancelled_attempt_exits_128_plus_the_signal(steps: Project):
    live = start_waiting(steps, "w3")
    lines = Lines(steps.start("watch", "steps/w3"))
    lines.until("▸ build")
    os.kill(live.pid, signal.SIGTERM)
    done = lines.finish()
    assert done.code == 128 + signal.SIGTERM
    assert "cancelled in build" in done.stderr
    finish(live)


def test_watch_sees_a_kill_9_at_once_and_says_how_to_go_on(steps: Project):
    live = start_waiting(steps, "w4")
    lines = Lines(steps.start("watch", "steps/w4"))
    lines.until("▸ build")
    # The attempt lives on well past its last line, so the time it lived differs from that line's.
    last_line = parse_iso(steps.log("steps", "w4")[-1]["at"])
    started = parse_iso(steps.log("steps", "w4")[1]["at"])
    while time.time() < last_line + 1.5:
        time.sleep(0.05)
    os.kill(live.pid, signal.SIGKILL)
    live.wait()
    done = lines.finish(timeout=10)
    assert done.code == 1
    assert "✗ build  interrupted: the attempt's process is gone, with no ending" in done.stderr
    assert "✗ steps/w4 interrupted in build (attempt 1)" in done.stderr
    assert f"why:     the attempt's process (pid {live.pid}) is gone, with no ending" in done.stderr
    assert "go on:   awf run steps.py --id w4 --continue" in done.stderr
    assert "totals:  2 stages (1 ran)" not in done.stderr and "totals:  1 stage (1 ran)" in done.stderr
    lived = re.search(r"totals:  1 stage \(1 ran\) · (\S+)", done.stderr)[1]
    assert parse_duration(lived) >= last_line + 1.5 - started - 0.1, lived


def test_watch_of_a_run_killed_before_it_began_names_the_interrupted_stage_on_a_terminal(steps: Project):
    live = start_waiting(steps, "w9")
    os.kill(live.pid, signal.SIGKILL)
    live.wait()
    code, _, screen = on_terminal(steps, "watch", "steps/w9")
    assert code == 1
    shown = final_text(screen)
    assert "✗ build  interrupted: the attempt's process is gone, with no ending" in shown
    assert "✗ steps/w9 interrupted in build (attempt 1)" in shown


def test_watch_of_an_ended_run_shows_it_and_exits_with_its_code(steps: Project):
    assert run(steps, "w5", "fail").code == 1
    done = steps.awf("watch", "steps/w5")
    assert done.code == 1
    assert "✗ build  failed: RuntimeError: the build broke" in done.stderr
    assert "✗ steps/w5 failed in build (attempt 1, exit 1)" in done.stderr
    assert done.stdout == ""
    assert run(steps, "w6", "complete").code == 0
    assert steps.awf("watch", "steps/w6").code == 0


def test_watch_after_a_continue_shows_the_reused_stage(steps: Project):
    assert run(steps, "w7", "stop").code == 3
    assert steps.awf("run", "steps.py", "--id", "w7", "--continue").code == 3
    done = steps.awf("watch", "steps/w7")
    assert done.code == 3
    assert "▶ steps/w7 · attempt 2" in done.stderr
    assert "↺ plan  from attempt 1 · docs/w7.md" in done.stderr


def test_watch_exit_codes_for_bad_names_and_damaged_files(steps: Project):
    assert steps.awf("watch", "steps/none").code == 1
    assert steps.awf("watch", "steps").code == 2
    assert run(steps, "w8", "complete").code == 0
    log = steps.run_dir("steps", "w8") / "run.jsonl"
    log.write_text(log.read_text().replace('"kind": "stage-start"', '"kind": 7', 1))
    damaged = steps.awf("watch", "steps/w8")
    assert damaged.code == 3 and str(log) in damaged.stderr


def test_watch_passes_over_a_line_that_is_not_json_as_awf_logs_and_a_continue_do(steps: Project):
    assert run(steps, "w10", "fail").code == 1
    log = steps.run_dir("steps", "w10") / "run.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join([*lines[:2], '{"version": 1, "kind": "log", "at": "cut short by a full disk\n', *lines[2:]]))
    done = steps.awf("watch", "steps/w10")
    assert done.code == 1, done.stderr
    assert "✗ steps/w10 failed in build (attempt 1, exit 1)" in done.stderr
    assert steps.awf("logs", "steps/w10").code == 0
