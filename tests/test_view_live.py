"""The live progress view on a terminal (a real pseudo-terminal), and the same view from `awf watch`."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from datetime import datetime, timedelta

import pytest
from conftest import AWF, Project
from reading_runs import run, write_steps

from awf.view.live import AgentRow, StageRow, ViewState, render_lines

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def has_color(screen: str) -> bool:
    """Whether any select-graphic-rendition sequence sets a foreground or background color."""
    return any(
        30 <= int(code) <= 49 or 90 <= int(code) <= 107
        for params in SGR.findall(screen)
        for code in params.split(";")
        if code
    )


def on_terminal(project: Project, *args: str, env: dict[str, str] | None = None, timeout: float = 30):
    """Run awf with stderr on a pseudo-terminal; return its exit code, stdout and the terminal's bytes."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    environment = {**project.env, "TERM": "xterm", **(env or {})}
    environment = {key: value for key, value in environment.items() if value is not None}
    process = subprocess.Popen(
        [*AWF, *args],
        cwd=project.path,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the other end closed: the process has exited
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    else:
        process.kill()
    stdout = process.stdout.read().decode()
    process.wait()
    os.close(master)
    return process.returncode, stdout, b"".join(chunks).decode(errors="replace")


def final_text(screen: str) -> list[str]:
    """What stays on the terminal after the live block is erased: the last frame and the closing."""
    tail = screen.rsplit("\x1b[2K", 1)[-1]
    return [line.strip() for line in ANSI.sub("", tail).replace("\r", "").splitlines() if line.strip()]


@pytest.fixture
def steps(project: Project) -> Project:
    write_steps(project)
    project.env.pop("NO_COLOR", None)
    return project


def test_a_continue_on_a_terminal_draws_the_live_block_and_watch_ends_the_same(steps: Project):
    assert run(steps, "t1", "stop").code == 3
    # The plan record is made two hours old by hand, as a person may edit a record.
    record = steps.run_dir("steps", "t1") / "stages" / "plan.json"
    data = json.loads(record.read_text())
    data["ended"] = (datetime.now().astimezone() - timedelta(hours=2, minutes=5)).isoformat(timespec="milliseconds")
    record.write_text(json.dumps(data))
    code, stdout, screen = on_terminal(steps, "run", "steps.py", "--id", "t1", "--continue")
    assert code == 3 and stdout == ""
    assert "\x1b[" in screen  # drawn, not printed line by line
    plain = ANSI.sub("", screen)
    assert "recorded by attempt 1, to come" in plain  # build, before this attempt reached it
    assert has_color(screen)  # colors, with NO_COLOR unset
    shown = final_text(screen)
    assert shown[0].startswith("▶ steps/t1 · attempt 2 · ")
    assert shown[1].startswith("↺ plan   from attempt 1, 2h0") and shown[1].endswith("· docs/t1.md")
    assert shown[2] == "■ build  stopped: the builder gave no answer"
    assert shown[3] == "■ steps/t1 stopped in build (attempt 2, exit 3)"
    assert "go on:   awf run steps.py --id t1 --continue" in shown
    # The same run from another terminal: the same last frame and the same closing block.
    code, _, watched = on_terminal(steps, "watch", "steps/t1")
    assert code == 3
    assert final_text(watched) == shown


def test_no_color_and_the_flag_drop_colors_but_keep_the_live_block(steps: Project):
    code, _, screen = on_terminal(steps, "run", "steps.py", "--id", "t2", "--", "complete", env={"NO_COLOR": "1"})
    assert code == 0 and "\x1b[2K" in screen and not has_color(screen)
    code, _, screen = on_terminal(steps, "run", "steps.py", "--id", "t3", "--no-color", "--", "complete")
    assert code == 0 and "\x1b[2K" in screen and not has_color(screen)
    assert final_text(screen)[-3:] == [
        "✓ steps/t3 completed (attempt 1)",
        final_text(screen)[-2],
        "records: .awf/runs/steps/t3",
    ]
    code, _, screen = on_terminal(steps, "watch", "steps/t3", "--no-color")
    assert code == 0 and not has_color(screen)


def test_off_a_terminal_progress_is_one_plain_line_per_change(steps: Project):
    result = run(steps, "t4", "complete")
    assert "\x1b" not in result.stderr
    assert result.stderr.splitlines()[:3] == ["▶ steps/t4 · attempt 1", "▸ plan", result.stderr.splitlines()[2]]
    assert result.stderr.splitlines()[-3].startswith("✓ steps/t4 completed")


def test_the_block_shows_each_kind_of_stage_line():
    now = 10_000.0
    iso = datetime.fromtimestamp(now - 7300).astimezone().isoformat()
    state = ViewState(name="fix/212", attempt=3, started=now - 75)
    state.rows = [
        StageRow("plan", "reused", {"attempt": 1, "ended": iso, "summary": "fix/212"}),
        StageRow(
            "build",
            "succeeded",
            {
                "started": datetime.fromtimestamp(now - 60).astimezone().isoformat(),
                "ended": datetime.fromtimestamp(now - 48).astimezone().isoformat(),
                "summary": "4be1c07",
            },
        ),
        StageRow("review", "running", None, now - 30),
        StageRow("publish", "to-come", {"attempt": 2}),
    ]
    state.agents["reviewer"] = AgentRow("reviewer", "codex", "gpt-5", "Review commit 4be1c07", 1, now - 29)
    lines = [text for text, _ in render_lines(state, now)]
    assert lines[0] == "▶ fix/212 · attempt 3 · review · 1m15s"
    assert lines[1] == "  ↺ plan     from attempt 1, 2h01m ago · fix/212"
    assert lines[2] == "  ✓ build    12.0s · 4be1c07"
    assert re.fullmatch(r"  . review   30.0s", lines[3])
    assert lines[4] == "      ◦ reviewer  codex · gpt-5 · Review commit 4be1c07  29.0s"
    assert lines[5] == "  · publish  recorded by attempt 2, to come"
    styles = dict(render_lines(state, now)[1:2])
    assert list(styles.values()) == ["cyan"]
    state.rows[2] = StageRow("review", "failed", {"reason": "no answer\nmore"})
    assert "  ✗ review   failed: no answer …" in [text for text, _ in render_lines(state, now)]
