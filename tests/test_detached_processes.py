"""With no sandbox, no process an agent starts outlives the agent's process, however it detached.

Through the real `awf run`, with an exec agent (tests/agents/detaches.py) that starts a sleeper
each way a process leaves its parent's process group: setsid, a double fork, nohup and disown,
a new process group; and one that ignores SIGTERM. Each ending of the agent's process ends them
all: its program exiting, its delivery ended after it answered, its pane closed, Ctrl-C,
--timeout. After a kill -9 of awf they work on under the agent, and the next attempt names it;
each way a person is given to end it ends them all. And the reaper under the agent passes on
what awf gives the program and what the program does, untouched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, finish, send
from panes_support import PaneProject, needs_tmux, pane_project

from awf.agents.reaper import descendants
from awf.record.liveness import is_alive

AGENT = str(Path(__file__).parent / "agents" / "detaches.py")
WAYS = ("setsid", "double-fork", "nohup", "new-group", "deaf")  # deaf: setsid, and it ignores SIGTERM

WORKFLOW = """
import json
import os
import time
from pathlib import Path

import awf


def lingering(marker):
    found = []
    for name in os.listdir("/proc"):
        try:
            words = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\\0")
        except OSError:
            continue
        found += [word.decode() for word in words if word.startswith(marker.encode() + b"-")]
    return sorted(found)


@awf.workflow(name="detach", description="An agent leaves daemons behind.")
async def detach(wf):
    async def work():
        agent = await wf.agents.open(key="worker", runtime=json.loads(os.environ["AGENT_RUNTIME"]))
        turn = await agent.run(prompt="Start your daemons, then answer.", schema={"type": "object"})
        if not turn.outcome.answered:
            wf.stop(f"{turn.outcome.kind}: {turn.outcome.reason}")
        if os.environ.get("CLOSE_AGENT"):
            await agent.close()
        # What the agent left, once its turn is over (and its pane closed): given time to go.
        until = time.monotonic() + 20
        while (left := lingering(os.environ["MARKER"])) and time.monotonic() < until:
            time.sleep(0.05)
        return {"answer": turn.outcome.value, "left": left}

    return await wf.stage("work", work, result={"type": "object"})
"""


def lingering(marker: str) -> dict[int, str]:
    """The sleepers still running, by pid: each names the way it detached in its marker."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            words = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for word in words:
            if word.startswith(marker.encode() + b"-"):
                found[int(name)] = word.decode()
    return found


def wait_none(marker: str, timeout: float = 20) -> dict[int, str]:
    until = time.monotonic() + timeout
    while (left := lingering(marker)) and time.monotonic() < until:
        time.sleep(0.05)
    return left


def end_lingering(marker: str) -> None:
    """After a test, whatever it left: the sleepers it started, by their pids."""
    for pid in lingering(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Detaching:
    """A project with the workflow, and a marker no other test's sleepers carry."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.marker = f"awf-detached-{uuid.uuid4().hex[:12]}"
        project.write("detach.py", WORKFLOW)

    def env(self, mode: str, **runtime: Any) -> dict[str, str]:
        spec = {"harness": "exec", "command": [sys.executable, AGENT, self.marker, mode], **runtime}
        return {"AGENT_RUNTIME": json.dumps(spec), "MARKER": self.marker}

    def detached(self, run_id: str, attempt: int = 1) -> Path:
        """The file the agent touches once all its sleepers run."""
        return self.project.run_dir("detach", run_id) / "agents" / str(attempt) / "worker" / "detached"

    def work(self, run_id: str) -> dict[str, Any]:
        stage = self.project.stage("detach", run_id, "work")
        assert stage is not None and stage["outcome"] == "succeeded", stage
        return stage["value"]

    def agent_pid(self, run_id: str) -> int:
        [entry] = [entry for entry in self.project.log("detach", run_id) if entry["kind"] == "agent-process"]
        return entry["pid"]


@pytest.fixture
def detaching(project: Project) -> Iterator[Detaching]:
    world = Detaching(project)
    try:
        yield world
    finally:
        end_lingering(world.marker)


@pytest.fixture
def panes(tmp_path: Path) -> Iterator[Detaching]:
    for project in pane_project(tmp_path):
        world = Detaching(project)
        try:
            yield world
        finally:
            end_lingering(world.marker)


@pytest.mark.parametrize("mode", ["answer", "stay"])
def test_what_an_agent_detached_ends_with_its_turn(detaching: Detaching, mode: str) -> None:
    # answer: its program exits once it has answered; stay: awf ends the delivery after it answered.
    done = detaching.project.awf("run", "detach.py", "--id", mode, env=detaching.env(mode))
    assert done.code == 0, done.stderr
    work = detaching.work(mode)
    assert work["answer"] == {"terminal": False, "foreground": False, "interrupted": False}
    assert work["left"] == [], "a daemon outlived the agent's turn"
    folder = detaching.detached(mode).parent
    assert sorted(file.name for file in folder.glob("started-*")) == sorted(f"started-{way}" for way in WAYS)
    assert lingering(detaching.marker) == {}


@needs_tmux
def test_what_an_agent_in_a_pane_detached_ends_when_its_pane_is_closed(panes: Detaching) -> None:
    env = {**panes.env("stay", placement="pane"), "CLOSE_AGENT": "1"}
    done = panes.project.awf("run", "detach.py", "--id", "p", env=env)
    assert done.code == 0, done.stderr
    work = panes.work("p")
    # The program keeps its terminal: the reaper under it takes neither the terminal nor its foreground.
    assert work["answer"] == {"terminal": True, "foreground": True, "interrupted": False}
    assert work["left"] == []
    assert lingering(panes.marker) == {}


@needs_tmux
def test_ctrl_c_typed_in_a_pane_reaches_the_agent_and_what_it_detached_still_ends(panes: Detaching) -> None:
    project = panes.project
    assert isinstance(project, PaneProject)
    env = {**panes.env("ctrl-c", placement="pane"), "CLOSE_AGENT": "1"}
    process = project.start("run", "detach.py", "--id", "i", env=env)
    try:
        project.wait_for(panes.detached("i"), timeout=60)
        [pane] = [entry["pane"] for entry in project.log("detach", "i") if entry["kind"] == "pane"]
        assert project.tmux("send-keys", "-t", pane, "C-c").returncode == 0
        done = finish(process, timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert done.code == 0, done.stderr
    work = panes.work("i")
    assert work["answer"] == {"terminal": True, "foreground": True, "interrupted": True}
    assert work["left"] == []


@pytest.mark.parametrize("ending", ["ctrl-c", "timeout"])
def test_what_an_agent_detached_ends_with_the_attempt(detaching: Detaching, ending: str) -> None:
    flags = ["--timeout", "10s"] if ending == "timeout" else []
    process = detaching.project.start("run", "detach.py", "--id", ending, *flags, env=detaching.env("work"))
    try:
        detaching.project.wait_for(detaching.detached(ending), timeout=60)
        assert len(lingering(detaching.marker)) == len(WAYS)
        if ending == "ctrl-c":
            send(process, signal.SIGINT)
        done = finish(process, timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert done.code == {"ctrl-c": 130, "timeout": 1}[ending], done.stderr
    assert wait_none(detaching.marker) == {}


def crash_leaving_daemons(detaching: Detaching, run_id: str) -> int:
    """kill -9 of awf while its agent works, having detached its sleepers: the agent's pid."""
    process = detaching.project.start("run", "detach.py", "--id", run_id, env=detaching.env("work"))
    try:
        detaching.project.wait_for(detaching.detached(run_id), timeout=60)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        finish(process)
    return detaching.agent_pid(run_id)


@pytest.mark.parametrize("way", ["printed command", "awf cancel", "--end-leftovers"])
def test_a_crash_leaves_the_daemons_under_the_agent_the_continue_names_and_each_way_to_end_it_ends_them(
    detaching: Detaching, way: str
) -> None:
    project = detaching.project
    agent = crash_leaving_daemons(detaching, "k")
    sleepers = lingering(detaching.marker)
    assert sorted(sleepers.values()) == sorted(f"{detaching.marker}-{way}" for way in WAYS)
    assert set(sleepers) <= set(descendants(agent)), "a daemon left the agent's tree"

    refused = project.awf("run", "detach.py", "--id", "k", "--continue", env=detaching.env("answer"))
    assert refused.code == 2, refused.stderr
    named = f"  agent worker of attempt 1 in stage work (pid {agent}): end it with kill -- -{agent}"
    assert named in refused.stderr.splitlines()
    assert "awf cancel detach/k ends them and starts nothing" in refused.stderr
    assert set(lingering(detaching.marker)) == set(sleepers), "a refused continue ends nothing"

    if way == "printed command":
        command = named.split("end it with ")[1]
        assert subprocess.run(["/bin/sh", "-c", command], timeout=30).returncode == 0
    elif way == "awf cancel":
        cancelled = project.awf("cancel", "detach/k")
        assert cancelled.code == 0, cancelled.stderr
        assert cancelled.stderr == (
            f"ended agent worker of attempt 1 (pid {agent}), which a crash left running, and every process it started\n"
        )
    else:
        done = project.awf(
            "run", "detach.py", "--id", "k", "--continue", "--end-leftovers", env=detaching.env("answer")
        )
        assert done.code == 0, done.stderr
        assert f"ended agent worker of attempt 1 (pid {agent})" in done.stderr
    assert wait_none(detaching.marker) == {}
    until = time.monotonic() + 20
    while is_alive(agent, None) and time.monotonic() < until:
        time.sleep(0.05)
    assert not is_alive(agent, None), "the agent outlived what it started"


ASK = str(Path(__file__).parent / "agents" / "ask.py") + ":ask"


def test_the_reaper_under_an_agent_passes_on_its_exit_signals_and_environment_untouched(project: Project) -> None:
    # A C locale with Python's coercion off: a Python started with it would add LC_CTYPE to the environment.
    env = {"TEXT_ANSWER": "1", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "LC_ALL": "", "LC_CTYPE": ""}
    env = {key: value for key, value in env.items() if value}
    project.env = {key: value for key, value in project.env.items() if key not in ("LC_ALL", "LC_CTYPE")}
    # cat's own signals, as the shell gives them to what it runs (its own mask changes as it forks).
    shows = "cat /proc/self/status | grep -E '^Sig(Ign|Blk):'; echo LC_CTYPE=${LC_CTYPE-unset}; cat >/dev/null"
    done = project.awf("run", ASK, "--id", "shows", "--", "/bin/sh", "-c", shows, env=env)
    assert done.code == 0, done.stderr
    stage = project.stage("ask", "shows", "plan")
    assert stage is not None
    # Nothing ignored or blocked (Python ignores SIGPIPE and SIGXFSZ for itself), and no LC_CTYPE added.
    assert stage["value"].split() == ["SigBlk:", "0" * 16, "SigIgn:", "0" * 16, "LC_CTYPE=unset"]

    killed = project.awf("run", ASK, "--id", "killed", "--", "/bin/sh", "-c", "kill -TERM $$", env=env)
    assert killed.code == 3, killed.stderr
    [turn] = [entry for entry in project.log("ask", "killed") if entry["kind"] == "turn"]
    assert "/bin/sh -c 'kill -TERM $$' was killed by signal 15 and printed nothing on stderr" in turn["reason"]


@needs_tmux
def test_after_a_crash_what_an_agent_in_a_pane_detached_ends_when_the_next_pane_run_closes_its_workspace(
    panes: Detaching,
) -> None:
    project = panes.project
    assert isinstance(project, PaneProject)
    process = project.start("run", "detach.py", "--id", "c", env=panes.env("work", placement="pane"))
    try:
        project.wait_for(panes.detached("c"), timeout=60)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        finish(process)
    left = lingering(panes.marker)
    assert sorted(left.values()) == sorted(f"{panes.marker}-{way}" for way in WAYS), "a crash ends nothing"
    [pane] = [entry for entry in project.log("detach", "c") if entry["kind"] == "pane"]
    assert set(left) <= set(descendants(pane["pid"])), "a daemon left the pane's tree"

    # The continue opens a pane, which closes the workspace of the attempt whose awf is gone.
    done = project.awf("run", "detach.py", "--id", "c", "--continue", env=panes.env("answer", placement="pane"))
    assert done.code == 0, done.stderr
    assert "attempt 1's agents' panes are still open in the workspace 'awf detach c #1'" in done.stderr
    assert panes.work("c")["left"] == []
    assert set(wait_none(panes.marker)) & set(left) == set()
