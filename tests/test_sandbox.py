"""`awf run --sandbox`: agents confined by bubblewrap, through the real CLI, the real claude and
codex against the fake model server, and an exec agent.

Each agent runs tests/agents/probes.py (the model asks the CLI's shell for it): writing in the
working directory, outside it and in the user's home, reading a planted SSH key, connecting to a
loopback port that is not the model's, and to the model's.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import Project, finish, send
from fakemodel import FakeModel, Shell, Text
from fakemodel.clis import base_env, claude_env, codex_env, require, write_codex_config
from panes_support import needs_tmux

PROBES = Path(__file__).parent / "agents" / "probes.py"
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key"
ANSWER = {"done": True}

WORKFLOW = """
import json
import os

import awf


@awf.workflow(name="probe", description="One agent tries what its sandbox allows.")
async def probe(wf):
    runtime = json.loads(os.environ["AGENT_RUNTIME"])
    sandbox = json.loads(os.environ.get("AGENT_SANDBOX", "null"))

    async def work():
        agent = await wf.agents.open(key="prober", runtime=runtime, sandbox=sandbox)
        timeout = float(os.environ.get("TURN_TIMEOUT", "90"))
        turn = await agent.run(prompt="Run the probes, then answer.", schema={"type": "object"}, timeout=timeout)
        if not turn.outcome.answered:
            wf.stop(f"{turn.outcome.kind}: {turn.outcome.reason}")
        if os.environ.get("STOP_ONCE") and wf.attempt == 1:
            wf.stop("stopped once, to be continued")
        return turn.outcome.value

    return await wf.stage("probe", work, result={})
"""

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)


@pytest.fixture
def other_port() -> Iterator[int]:
    """A loopback port with a listener on it that is not the model's."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


class World:
    """A project whose HOME is a fake one with an SSH key in it, and its agent's probes."""

    def __init__(self, project: Project, model: FakeModel, other_port: int, elsewhere: Path) -> None:
        self.project = project
        self.model = model
        self.home = elsewhere / "home"
        (self.home / ".ssh").mkdir(parents=True)
        self.key = self.home / ".ssh" / "id_ed25519"
        self.key.write_text(KEY + "\n")
        self.outside = elsewhere / "outside.txt"
        self.other_port = other_port
        self.workflow = project.write("probe.py", WORKFLOW)
        shutil.copy(PROBES, project.path / "probes.py")
        project.env = {**base_env(), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", "HOME": str(self.home)}

    def probe_args(self) -> list[str]:
        return [
            str(self.outside),
            str(self.home),
            str(self.key),
            str(self.other_port),
            str(urlsplit(self.model.url).port),
        ]

    def shell(self) -> str:
        """The command the model asks the CLI to run: the probes, from the working directory."""
        return shlex.join(["python3", "probes.py", *self.probe_args()])

    def run(self, run_id: str, runtime: dict[str, Any], *flags: str, sandbox: Any = None, **env: str) -> Any:
        given = {"AGENT_RUNTIME": json.dumps(runtime), "AGENT_SANDBOX": json.dumps(sandbox), **env}
        return self.project.awf("run", str(self.workflow), "--id", run_id, *flags, env=given, timeout=180)

    def made_in_cwd(self) -> bool:
        return (self.project.path / "made-by-agent.txt").exists()

    def escaped(self) -> list[str]:
        """What the agent wrote where it must not have."""
        return [str(path) for path in (self.outside, self.home / "made-by-agent.txt") if path.exists()]


def probes_in(text: str) -> dict[str, str]:
    """The probes' results in a request the model got, where the CLI's shell gave them back."""
    start = text.index("PROBES {") + len("PROBES ")
    # Quoted once in the request's JSON, or twice where the CLI keeps the output as a JSON string.
    return json.loads(re.sub(r'\\+"', '"', text[start : text.index("}", start) + 1]))


@pytest.fixture
def world(project: Project, model: FakeModel, other_port: int, tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(project, model, other_port, tmp_path_factory.mktemp("elsewhere"))


def cli_runtime(world: World, harness: str) -> dict[str, Any]:
    require(harness)
    url, home = world.model.url, world.home
    if harness == "claude":
        world.project.env.update(claude_env(url, home))
        world.project.env["HOME"] = str(home)
        # Claude Code asks before it runs a command; the probes are the test's own.
        return {"harness": "claude", "extra_args": ["--allowedTools", "Bash"]}
    codex_home = home / ".codex"
    world.project.env.update(codex_env(codex_home))
    world.project.env["HOME"] = str(home)
    write_codex_config(codex_home, url)
    return {"harness": "codex"}


@pytest.mark.harnesses  # a real CLI: CI's harness step
@pytest.mark.parametrize("harness", ["claude", "codex"])
@pytest.mark.parametrize("profile", ["workspace", "read-only"])
def test_a_sandboxed_cli_writes_only_where_its_profile_allows_and_reaches_only_its_model(
    world: World, harness: str, profile: str
) -> None:
    runtime = cli_runtime(world, harness)
    world.model.script(Shell(world.shell()), Shell("awf answer " + shlex.quote(json.dumps(ANSWER))), Text("Done."))
    done = world.run("r", runtime, "--sandbox", profile)

    assert done.code == 0, done.stderr
    assert world.project.stage("probe", "r", "probe")["value"] == ANSWER  # the fake model was reached
    probes = probes_in(world.model.conversation[1].text())
    assert probes["write_cwd"] == ("ok" if profile == "workspace" else "refused: Read-only file system")
    assert world.made_in_cwd() == (profile == "workspace")
    for refused in ("write_outside", "write_home", "read_key", "connect_other"):
        assert probes[refused].startswith("refused"), (refused, probes)
    assert probes["connect_model"] == "ok"
    assert world.escaped() == []
    assert KEY not in json.dumps([request.body for request in world.model.conversation])
    [run_line] = [entry for entry in world.project.log("probe", "r") if entry["kind"] == "run"]
    assert run_line["sandbox"]["profile"] == profile


@pytest.mark.harnesses  # a real CLI: CI's harness step
def test_a_sandboxed_cli_gets_a_fresh_home_with_only_its_credential(world: World) -> None:
    runtime = cli_runtime(world, "codex")
    codex_home = world.home / ".codex"
    (codex_home / "auth.json").write_text('{"OPENAI_API_KEY": null}\n')
    (codex_home / "history.jsonl").write_text('{"text": "the operator\'s own history"}\n')
    world.model.script(Shell("awf answer " + shlex.quote(json.dumps(ANSWER))), Text("Done."))
    done = world.run("h", runtime, "--sandbox", "workspace")

    assert done.code == 0, done.stderr
    fresh = world.project.run_dir("probe", "h") / "agents" / "1" / "prober" / "home" / ".codex"
    assert (fresh / "auth.json").read_text() == (codex_home / "auth.json").read_text()
    assert (fresh / "config.toml").exists() and not (fresh / "history.jsonl").exists()
    assert list(fresh.glob("sessions/*/*/*/rollout-*.jsonl")), "codex kept its session in the fresh home"
    assert not list(codex_home.glob("sessions/*/*/*/rollout-*.jsonl")), "the operator's codex home was used"
    [process] = [entry for entry in world.project.log("probe", "h") if entry["kind"] == "agent-process"]
    spec = launched(process["command"])
    assert spec["bwrap"].endswith("bwrap")
    command = " ".join(spec["command"])
    assert ' -c web_search="disabled" ' in command and " --sandbox danger-full-access " in command


def launched(command: list[str]) -> dict[str, Any]:
    """What an agent process was started as: awf's sandbox launcher, given the sandbox to make and
    the command to run in it."""
    assert command[-2].endswith("sandbox/launch.py"), command
    spec: dict[str, Any] = json.loads(command[-1])
    return spec


def exec_runtime(world: World) -> dict[str, Any]:
    return {"harness": "exec", "command": [sys.executable, "probes.py", *world.probe_args(), "--answer"]}


def test_an_exec_agent_in_a_json_profile_reaches_the_hosts_it_lists_and_nothing_else(world: World) -> None:
    profile = world.project.write(
        "agents.json", json.dumps({"write": ["."], "network": [f"127.0.0.1:{urlsplit(world.model.url).port}"]})
    )
    done = world.run("x", exec_runtime(world), "--sandbox", str(profile))

    assert done.code == 0, done.stderr
    probes = world.project.stage("probe", "x", "probe")["value"]
    assert probes["write_cwd"] == "ok" and probes["connect_model"] == "ok"
    for refused in ("write_outside", "write_home", "read_key", "connect_other"):
        assert probes[refused].startswith("refused"), (refused, probes)
    assert world.escaped() == []
    [run_line] = [entry for entry in world.project.log("probe", "x") if entry["kind"] == "run"]
    assert run_line["sandbox"] == {
        "profile": str(profile),
        "read": [],
        "write": [str(world.project.path.resolve())],
        "network": [f"127.0.0.1:{urlsplit(world.model.url).port}"],
        "limits": {"processes": 2048, "open_files": 8192, "cpu_seconds": None, "tmp_mib": 1024, "shm_mib": 256},
    }


def test_an_agent_may_ask_for_less_than_the_runs_sandbox_and_never_for_more(world: World) -> None:
    less = world.run("less", exec_runtime(world), "--sandbox", "workspace", sandbox="read-only")
    assert less.code == 0, less.stderr
    assert world.project.stage("probe", "less", "probe")["value"]["write_cwd"] == "refused: Read-only file system"
    assert not world.made_in_cwd()

    more = world.run("more", exec_runtime(world), "--sandbox", "read-only", sandbox="workspace")
    assert more.code == 1, more.stderr
    reason = world.project.stage("probe", "more", "probe")["reason"]
    assert "asks for more than the run's allows" in reason and "read-only" in reason

    alone = world.run("alone", exec_runtime(world), sandbox={"read": ["."]})
    assert alone.code == 0, alone.stderr
    assert world.project.stage("probe", "alone", "probe")["value"]["write_cwd"].startswith("refused")


def test_a_continue_keeps_the_sandbox_and_refuses_another(world: World) -> None:
    first = world.run("c", exec_runtime(world), "--sandbox", "read-only", STOP_ONCE="1")
    assert first.code == 3, first.stderr

    other = world.run("c", exec_runtime(world), "--continue", "--sandbox", "workspace")
    assert other.code == 2
    assert "started with --sandbox read-only, not workspace" in other.stderr

    again = world.run("c", exec_runtime(world), "--continue")
    assert again.code == 0, again.stderr
    assert world.project.stage("probe", "c", "probe")["value"]["write_cwd"] == "refused: Read-only file system"
    opened = [entry for entry in world.project.log("probe", "c") if entry["kind"] == "agent"]
    assert [entry["sandbox"]["profile"] for entry in opened] == ["read-only", "read-only"]
    shown = world.project.awf("runs", "probe/c", "--json")
    assert shown.code == 0 and shown.out["sandbox"]["profile"] == "read-only"


def test_a_bad_profile_is_refused_with_every_problem_and_nothing_recorded(world: World) -> None:
    profile = world.project.write(
        "bad.json", json.dumps({"write": ["./no-such-folder"], "network": ["not a host"], "reed": ["."]})
    )
    done = world.run("bad", exec_runtime(world), "--sandbox", str(profile))

    assert done.code == 2
    assert done.stderr.startswith(f"awf: --sandbox {profile} cannot be used:")
    assert "'reed' is not a profile's field" in done.stderr
    assert "no-such-folder does not exist" in done.stderr
    assert "'not a host' is not a host" in done.stderr
    assert not (world.project.path / ".awf" / "runs" / "probe").exists()

    unknown = world.run("bad", exec_runtime(world), "--sandbox", "workspaces")
    assert unknown.code == 2 and "not a profile's name (none, workspace, read-only)" in unknown.stderr


def test_a_machine_without_bubblewrap_refuses_a_sandbox_and_says_how_to_install_it(
    world: World, tmp_path: Path
) -> None:
    empty = tmp_path / "no-bwrap"
    empty.mkdir()
    done = world.run("nb", exec_runtime(world), "--sandbox", "workspace", PATH=str(empty))

    assert done.code == 2
    assert "bubblewrap is not installed" in done.stderr and "apt-get install -y bubblewrap" in done.stderr
    assert not (world.project.path / ".awf" / "runs" / "probe").exists()
    unconfined = world.run("nb", exec_runtime(world), PATH=str(empty))
    assert unconfined.code == 0, unconfined.stderr
    own = world.run("own", exec_runtime(world), sandbox="read-only", PATH=str(empty))
    assert own.code == 1
    assert "apt-get install -y bubblewrap" in world.project.stage("probe", "own", "probe")["reason"]


def lingering(marker: str) -> list[int]:
    """Processes whose command line holds `marker`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            words = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in words:
            found.append(int(name))
    return found


def wait_for_one(marker: str, timeout: float = 30) -> list[int]:
    until = time.monotonic() + timeout
    while not (found := lingering(marker)) and time.monotonic() < until:
        time.sleep(0.05)
    return found


def wait_none(marker: str, timeout: float = 15) -> list[int]:
    until = time.monotonic() + timeout
    while (left := lingering(marker)) and time.monotonic() < until:
        time.sleep(0.05)
    return left


@pytest.mark.parametrize("ending", ["ctrl-c", "timeout", "crash"])
def test_sandboxed_processes_are_gone_when_the_attempt_ends(world: World, ending: str) -> None:
    marker = f"awf-sandbox-marker-{os.getpid()}-{ending}"
    started = world.project.path / "started"
    # Its child outlives the shell's turn unless the sandbox goes with the attempt; the marker names it.
    child = f"python3 -c 'import time; time.sleep(300)' {marker}"
    runtime = {"harness": "exec", "command": ["/bin/sh", "-c", f"{child} & echo > started; wait"]}
    flags = ["--sandbox", "workspace"] + (["--timeout", "3s"] if ending == "timeout" else [])
    given = {"AGENT_RUNTIME": json.dumps(runtime), "AGENT_SANDBOX": "null"}
    process = world.project.start("run", str(world.workflow), "--id", ending, *flags, env=given)
    try:
        world.project.wait_for(started, timeout=60)
        # The shell writes `started` once it has forked the child, which may not have exec'd yet.
        assert wait_for_one(marker), "the agent's child never started"
        if ending in ("ctrl-c", "crash"):
            send(process, signal.SIGINT if ending == "ctrl-c" else signal.SIGKILL)
        done = finish(process, timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert done.code == {"ctrl-c": 130, "timeout": 1, "crash": -signal.SIGKILL}[ending], done.stderr
    assert wait_none(marker) == []


@needs_tmux
def test_an_agent_in_a_pane_runs_in_the_sandbox(world: World) -> None:
    server = f"awf-test-{uuid.uuid4().hex[:12]}"
    world.project.env["AWF_TMUX_SOCKET"] = server
    runtime = {**exec_runtime(world), "placement": "pane"}
    try:
        done = world.run("p", runtime, "--sandbox", "read-only")
    finally:
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True, timeout=15)
    assert done.code == 0, done.stderr
    probes = world.project.stage("probe", "p", "probe")["value"]
    for refused in ("write_cwd", "write_outside", "write_home", "read_key", "connect_other", "connect_model"):
        assert probes[refused].startswith("refused"), (refused, probes)
    assert world.escaped() == [] and not world.made_in_cwd()


PROXY_AGENT = """
import json, os, socket, subprocess, sys

sys.stdin.read()
proxy = os.environ["HTTPS_PROXY"].removeprefix("http://")
host, port = proxy.rsplit(":", 1)


def connect(target):
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
        return conn.recv(200).decode().split("\\r\\n")[0]


said = {"listed": connect(sys.argv[1]), "unlisted": connect("example.com:443")}
subprocess.run(["awf", "answer", json.dumps(said)], check=True)
"""


def test_hosts_beyond_the_model_go_through_a_proxy_that_lets_through_only_what_the_profile_lists(
    world: World,
) -> None:
    world.project.write("proxy_agent.py", PROXY_AGENT)
    listed = f"127.0.0.1:{world.other_port}"
    profile = {"read": ["."], "network": ["pypi.org", listed]}
    runtime = {"harness": "exec", "command": [sys.executable, "proxy_agent.py", listed]}
    done = world.run("proxy", runtime, sandbox=profile)

    assert done.code == 0, done.stderr
    said = world.project.stage("probe", "proxy", "probe")["value"]
    assert said == {"listed": "HTTP/1.1 200 Connection Established", "unlisted": "HTTP/1.1 403 Forbidden"}


@pytest.mark.harnesses  # a real CLI: CI's harness step
def test_a_sandboxed_claude_gets_a_fresh_config_with_only_its_login_and_no_web_tools(world: World) -> None:
    runtime = cli_runtime(world, "claude")
    own = world.home / ".claude"
    (own / "projects" / "other-project").mkdir(parents=True)
    (own / "projects" / "other-project" / "transcript.jsonl").write_text('{"text": "the operator\'s own talk"}\n')
    (own / ".credentials.json").write_text("{}\n")
    world.model.script(Shell("awf answer " + shlex.quote(json.dumps(ANSWER))), Text("Done."))
    done = world.run("h", runtime, "--sandbox", "workspace")

    assert done.code == 0, done.stderr
    fresh = world.project.run_dir("probe", "h") / "agents" / "1" / "prober" / "home" / ".claude"
    assert (fresh / ".credentials.json").read_text() == "{}\n"
    assert not (fresh / "projects" / "other-project").exists()
    assert list(fresh.glob("projects/*/*.jsonl")), "Claude Code kept its transcript in the fresh config"
    [process] = [entry for entry in world.project.log("probe", "h") if entry["kind"] == "agent-process"]
    spec = launched(process["command"])
    assert spec["bwrap"].endswith("bwrap")
    assert " --disallowedTools WebSearch WebFetch " in " ".join(spec["command"])


def test_a_machine_where_bubblewrap_cannot_make_a_sandbox_refuses_and_names_user_namespaces(
    world: World, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # What bwrap says where unprivileged user namespaces are off.
    fake = bin_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    done = world.run("userns", exec_runtime(world), "--sandbox", "workspace", PATH=str(bin_dir))

    assert done.code == 2
    assert "cannot make a sandbox here (bwrap: No permissions to creating new namespace)" in done.stderr
    assert "kernel.unprivileged_userns_clone=1" in done.stderr
    assert not (world.project.path / ".awf" / "runs" / "probe").exists()
