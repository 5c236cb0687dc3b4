"""`awf logs`: the history as lines with cursors, --after across appends, --follow, exit codes."""

from __future__ import annotations

import json
import os
import queue
import signal
import threading

import pytest
from conftest import Project, finish
from reading_runs import end_live, make_world, release, run, start_waiting, write_steps

from awf.record.schemas import validator


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    project = Project(tmp_path_factory.mktemp("logs"))
    made = make_world(project)
    yield project, made
    end_live(project, made["live"])


def json_lines(result) -> list[dict]:
    items = [json.loads(line) for line in result.stdout.splitlines()]
    for item in items:
        validator("logs")(item)
    return items


def test_every_entry_as_a_line_with_its_cursor(world):
    project, _ = world
    result = project.awf("logs", "steps/stopped")
    assert result.code == 0, result.stderr
    log = (project.run_dir("steps", "stopped") / "run.jsonl").read_bytes()
    cursors = [int(line.split()[0]) for line in result.stdout.splitlines() if line[:8].strip()]
    starts = [0, *[i + 1 for i, byte in enumerate(log) if byte == 10][:-1]]
    assert cursors == starts  # one printed line per entry, each at the offset its entry starts at
    text = result.stdout
    assert 'run steps/stopped created: argv ["stop"]' in text
    assert "attempt 1 started (pid" in text and "attempt 2 started (pid" in text and "--continue" in text
    assert "#1 ✓ plan" in text and "docs/stopped.md" in text
    assert "#1 building the stop way" in text
    assert "#2 ■ build  stopped: the builder gave no answer" in text
    assert "attempt 2 stopped in build (exit 3): the builder gave no answer" in text
    assert "go on: awf run steps.py --id stopped --continue" in text


def test_json_lines_carry_cursor_text_and_entry(world):
    project, _ = world
    items = json_lines(project.awf("logs", "steps/failed", "--json"))
    assert [item["entry"]["kind"] for item in items][:2] == ["run", "attempt-start"]
    failed = next(item for item in items if item["entry"]["kind"] == "stage" and item["entry"]["stage"] == "build")
    assert failed["text"].startswith("#1 ✗ build  failed: RuntimeError: the build broke")
    raw = (project.run_dir("steps", "failed") / "run.jsonl").read_bytes()
    assert json.loads(raw[failed["cursor"] :].split(b"\n")[0]) == failed["entry"]


def test_filters_by_attempt_and_stage(world):
    project, _ = world
    second = json_lines(project.awf("logs", "steps/stopped", "--json", "--attempt", "2"))
    assert second and all(item["entry"]["attempt"] == 2 for item in second)
    build = json_lines(project.awf("logs", "steps/stopped", "--json", "--stage", "build"))
    assert {item["entry"]["kind"] for item in build} == {"stage-start", "stage", "attempt-end", "start-point"}
    both = json_lines(project.awf("logs", "steps/stopped", "--json", "--stage", "build", "--attempt", "1"))
    assert [item["entry"]["kind"] for item in both] == ["stage-start", "stage", "attempt-end"]
    assert project.awf("logs", "steps/stopped", "--agent", "planner").stdout == ""


def test_an_interrupted_runs_logs_end_with_the_command_that_goes_on(world):
    project, _ = world
    result = project.awf("logs", "steps/crashed")
    assert result.code == 0
    last = result.stdout.rstrip().splitlines()[-2:]
    assert "attempt 1 interrupted in stage build: its process (pid " in last[0]
    assert last[0].endswith(") is gone, with no ending")
    assert last[1].strip() == "go on: awf run steps.py --id crashed --continue"
    items = json_lines(project.awf("logs", "steps/crashed", "--json"))
    assert items[-1]["cursor"] is None and items[-1]["go_on"] == "awf run steps.py --id crashed --continue"
    assert items[-1]["interrupted"]["stage"] == "build"


def test_after_a_cursor_prints_only_what_came_since_across_appends(project: Project):
    write_steps(project)
    assert run(project, "poll", "stop").code == 3
    first = json_lines(project.awf("logs", "steps/poll", "--json"))
    cursor = first[-1]["cursor"]
    assert project.awf("logs", "steps/poll", "--after", str(cursor)).stdout == ""
    assert project.awf("run", "steps.py", "--id", "poll", "--continue").code == 3
    since = json_lines(project.awf("logs", "steps/poll", "--json", "--after", str(cursor)))
    assert since[0]["entry"]["kind"] == "attempt-start" and since[0]["entry"]["attempt"] == 2
    assert since[0]["cursor"] > cursor
    assert all(item["entry"]["attempt"] == 2 for item in since)
    everything = json_lines(project.awf("logs", "steps/poll", "--json"))
    assert everything == first + since


def test_a_cursor_that_does_not_fit_exits_1(world):
    project, _ = world
    size = (project.run_dir("steps", "done") / "run.jsonl").stat().st_size
    for cursor in ("3", "-1", str(size), str(size + 100), "later"):
        result = project.awf("logs", "steps/done", "--after", cursor)
        assert result.code == 1, cursor
        assert f"cursor '{cursor}' does not fit run steps/done" in result.stderr and result.stdout == ""


def test_exit_codes(world, tmp_path):
    project, _ = world
    assert project.awf("logs", "steps/nope").code == 1
    assert project.awf("logs", "steps/done", "--attempt", "2").code == 1
    assert project.awf("logs", "steps").code == 2
    assert project.awf("logs", "steps/done", "--attempt", "x").code == 2
    assert project.awf("logs", "steps/done", "--turn", "1/planner/1").code == 1
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(project.run_dir("steps", "done"), root / "steps" / "done")
    log = root / "steps" / "done" / "run.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace('"kind": "', '"kind": "nonsense-', 1)
    log.write_text("".join(lines))
    damaged = project.awf("logs", "steps/done", "--run-root", str(root))
    assert damaged.code == 3 and str(log) in damaged.stderr and "log-entry.schema.json" in damaged.stderr


class Reader:
    """Lines of a background process's stdout, as they come."""

    def __init__(self, process) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process) -> None:
        for line in process.stdout:
            self.lines.put(line)

    def until(self, text: str, timeout: float = 20) -> list[str]:
        seen = []
        while True:
            line = self.lines.get(timeout=timeout)
            seen.append(line)
            if text in line:
                return seen


def test_follow_prints_what_another_process_writes_and_ends_with_the_attempt(project: Project):
    write_steps(project)
    live = start_waiting(project, "followed")
    follow = project.start("logs", "steps/followed", "--follow")
    reader = Reader(follow)
    reader.until("#1 ▸ build")
    assert follow.poll() is None  # it waits for more
    release(project, "followed")
    seen = reader.until("attempt 1 completed")
    assert any("#1 ✓ build" in line for line in seen) and any("#1 ✓ review" in line for line in seen)
    assert finish(follow).code == 0
    assert finish(live).code == 0


def test_follow_ends_when_the_attempts_process_is_killed(project: Project):
    write_steps(project)
    live = start_waiting(project, "killed")
    follow = project.start("logs", "steps/killed", "--follow", "--json")
    reader = Reader(follow)
    reader.until('"kind": "stage-start"')
    os.kill(live.pid, signal.SIGKILL)
    live.wait()
    last = json.loads(reader.until('"interrupted"')[-1])
    assert last["go_on"] == "awf run steps.py --id killed --continue"
    assert finish(follow).code == 0


def test_follow_of_an_ended_run_prints_and_returns(world):
    project, _ = world
    result = project.awf("logs", "steps/done", "--follow", timeout=20)
    assert result.code == 0 and "attempt 1 completed" in result.stdout
