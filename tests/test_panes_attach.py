"""`awf attach`: a person's terminal on a run's panes, to watch an agent and type to it."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import AWF, finish, send
from panes_support import WORKFLOW, PaneProject, needs_tmux, pane_project, wait_until

ASK = str(Path(__file__).parent / "agents" / "ask.py") + ":ask"


@pytest.fixture
def panes(tmp_path: Path) -> Iterator[PaneProject]:
    yield from pane_project(tmp_path)


def test_attach_to_a_run_with_no_panes_is_a_clear_error(panes: PaneProject) -> None:
    assert panes.awf("run", ASK, "--id", "h", "--", "answer.py", '{"branch": "b", "steps": []}').code == 0
    done = panes.awf("attach", "ask/h")
    assert done.code == 1 and done.stdout == ""
    assert done.stderr == (
        'awf: run ask/h has no panes: none of its agents ran in one (a runtime with "placement": "pane"); '
        "follow it with `awf watch` or `awf logs`\n"
    )
    missing = panes.awf("attach", "ask/nothing")
    assert missing.code == 1 and "there is no run ask/nothing" in missing.stderr
    assert panes.awf("attach", "not a run").code == 2


@needs_tmux
def test_attach_to_a_run_whose_panes_closed_or_an_agent_without_one(panes: PaneProject) -> None:
    assert panes.run_pane("done", "answer").code == 0
    closed = panes.awf("attach", "pane/done")
    assert closed.code == 1
    assert closed.stderr.startswith(
        "awf: the panes of run pane/done are closed: attempt 1's workspace 'awf pane done #1' closed with its attempt"
    )
    nobody = panes.awf("attach", "pane/done", "reviewer")
    assert nobody.code == 1
    assert nobody.stderr == "awf: agent reviewer of run pane/done never had a pane; the agents that had: planner\n"


@needs_tmux
def test_attach_shows_the_agents_pane_and_what_a_person_types_reaches_the_agent(panes: PaneProject) -> None:
    process = panes.start("run", WORKFLOW, "--id", "t", "--", "quiet", env={"IDLE": "600"})
    folder = panes.agent_dir("t")
    try:
        wait_until(lambda: (folder / "seen-1.txt").exists(), what="the agent reading its prompt")
        not_here = panes.awf("attach", "pane/t")
        assert not_here.code == 1
        assert (
            f"this is not a terminal; the workspace is 'awf pane t #1' on `tmux -L {panes.server}`" in not_here.stderr
        )

        terminal = Terminal(panes, "attach", "pane/t", "planner")
        try:
            terminal.wait_for(b"[read message 1:")
            terminal.type(b"hello from a person\r\x04")  # a line and Ctrl-D, as the agent reads them
            wait_until(lambda: (folder / "seen-2.txt").exists(), what="the typed line reaching the agent")
            assert (folder / "seen-2.txt").read_text() == "hello from a person\n"
            terminal.wait_for(b"[read message 2:")
            panes.tmux("detach-client", "-s", "=awf pane t #1")
            assert terminal.wait() == 0, "awf attach ends as tmux does once detached"
        finally:
            terminal.close()
        assert panes.workspaces() == ["awf pane t #1"], "detaching leaves the agent working"
    finally:
        send(process, signal.SIGINT)
        done = finish(process)
    assert done.code == 130, done.stderr
    assert panes.workspaces() == [], "Ctrl-C ends the attempt, which closes its panes"


class Terminal:
    """awf on a pseudo-terminal, as a person's terminal would run it."""

    def __init__(self, panes: PaneProject, *args: str) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {**panes.env, "TERM": "xterm"}
        self.process = subprocess.Popen(
            [*AWF, *args], cwd=panes.path, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
        )
        os.close(slave)
        self.seen = b""

    def wait_for(self, text: bytes, timeout: float = 20) -> None:
        until = time.monotonic() + timeout
        while text not in self.seen:
            if time.monotonic() > until:
                raise AssertionError(f"{text!r} never showed; the terminal had {self.seen[-2000:]!r}")
            self._read(0.1)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait(self, timeout: float = 20) -> int:
        until = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < until:
            self._read(0.1)
        return self.process.wait(timeout=1)

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                self.seen += os.read(self.master, 65536)
            except OSError:
                pass

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)
