"""The sandbox holds against the agent inside it: an exec agent spends its turn trying to get out.

Every escape is tried through the real `awf run --sandbox` CLI, under `workspace`, `read-only`
and a profile file, by awf run as root and as an ordinary user (made by .ci/escape-user; CI runs as
root). Each test asserts the escape failed and that nothing outside the sandbox changed: the
operator's files, the workflow and what it imports, the repository's hooks and config, another
run's record. docs/sandboxes.md's threat model lists each escape and the test that tries it.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.escapes,
    pytest.mark.skipif(
        shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
    ),
]

ATTACKER = Path(__file__).with_name("attacker.py")
USER = "awf-escape"  # the ordinary user .ci/escape-user makes
MARKER = "/tmp/awf-escape-owned"  # what code an agent got to run outside would leave

WORKFLOW = """
import json
import os

import awf

import helper


@awf.workflow(name="escape", description="An agent tries to get out of its sandbox.")
async def escape(wf):
    runtime = json.loads(os.environ["ESCAPE_RUNTIME"])
    turns = int(os.environ.get("ESCAPE_TURNS", "1"))

    async def work():
        said = []
        for number in range(1, turns + 1):
            agent = await wf.agents.open(key="attacker", runtime=runtime)
            turn = await agent.run(prompt=f"Turn {number}: get out.", schema={"type": "object"}, timeout=120)
            outcome = turn.outcome
            said.append({"outcome": outcome.kind, "value": outcome.value if outcome.answered else None,
                         "reason": None if outcome.answered else outcome.reason})
        if os.environ.get("ESCAPE_STOP") and wf.attempt == 1:
            wf.stop("stopped once, to be continued")
        return said

    return await wf.stage(helper.STAGE, work, result={"type": "array"})
"""

HELPER = 'STAGE = "escape"\n'

# What an agent must manage under each profile; every other escape is held.
MUST_WORK = {"workspace": {"commit"}, "profile": set(), "read-only": set()}
BATTERY = [
    "capabilities",
    "remount /etc read-write",
    "remount awf's install read-write",
    "unmount what hides the records",
    "make a user namespace",
    "read another run's record",
    "write its own run's record",
    "write outside",
    "read the operator's secret",
    "read /etc/shadow",
    "connect a unix socket outside",
    "a datagram socket pair",
    "reach another loopback port",
    "a raw socket",
    "ptrace a process outside",
    "stop a process outside",
    "the kernel keyrings",
    "io_uring",
    "type into its terminal",
    "change the workflow",
    "change a module the workflow imports",
    "move the workflow's folder away",
    "add a git hook",
    "change git's config",
    "change git's info",
    "move .git away",
    "move .awf away",
    "commit",
]


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


@dataclass
class Operator:
    """Who runs awf (root, or an ordinary user), and the world they run it in: a project that is
    a git repository with a workflow in `flows/`, a home with a secret, a file outside to protect."""

    who: str
    base: Path
    uid: int
    gid: int
    home: Path = field(init=False)
    project: Path = field(init=False)
    outside: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.base / "home"
        self.project = self.base / "project"
        self.outside = self.base / "outside"
        for folder in (self.home / ".ssh", self.project / "flows", self.outside):
            folder.mkdir(parents=True)
        (self.home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key\n")
        (self.outside / "victim.txt").write_text("the operator's file\n")
        (self.project / "flows" / "escape.py").write_text(textwrap.dedent(WORKFLOW).lstrip())
        (self.project / "flows" / "helper.py").write_text(HELPER)
        (self.project / "README.md").write_text("a project\n")
        self.chown(self.base)
        for words in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
            self.git(*words)

    def chown(self, path: Path) -> None:
        if self.uid == os.getuid():
            return
        for folder, dirs, files in os.walk(path):
            os.chown(folder, self.uid, self.gid)
            for name in dirs + files:
                os.chown(os.path.join(folder, name), self.uid, self.gid, follow_symlinks=False)

    def env(self, more: dict[str, str] | None = None) -> dict[str, str]:
        path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])
        base = {
            "HOME": str(self.home),
            "PATH": path,
            "NO_COLOR": "1",
            "PYTHONUNBUFFERED": "1",
            "GIT_AUTHOR_NAME": "op",
            "GIT_AUTHOR_EMAIL": "op@example.com",
            "GIT_COMMITTER_NAME": "op",
            "GIT_COMMITTER_EMAIL": "op@example.com",
        }
        return {**base, **(more or {})}

    def command(self, words: list[str], env: dict[str, str]) -> list[str]:
        if self.uid == os.getuid():
            return words
        pairs = [f"{key}={value}" for key, value in env.items()]
        setpriv = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups"]
        return [*setpriv, "--", "env", "-i", *pairs, *words]

    def run(self, words: list[str], more: dict[str, str] | None = None, timeout: float = 180) -> Result:
        env = self.env(more)
        done = subprocess.run(
            self.command(words, env),
            cwd=self.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def awf(self, *args: str, env: dict[str, str] | None = None, timeout: float = 180) -> Result:
        return self.run([sys.executable, "-m", "awf", *args], env, timeout)

    def git(self, *args: str) -> None:
        done = self.run(["git", *args])
        assert done.code == 0, done.stderr

    def run_dir(self, run_id: str) -> Path:
        return self.project / ".awf" / "runs" / "escape" / run_id

    def log(self, run_id: str) -> list[dict[str, Any]]:
        text = (self.run_dir(run_id) / "run.jsonl").read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def value(self, run_id: str) -> list[dict[str, Any]]:
        record = json.loads((self.run_dir(run_id) / "stages" / "escape.json").read_text())
        value: list[dict[str, Any]] = record["value"]
        return value


def _can_run_as(user: pwd.struct_passwd) -> str | None:
    """Why the ordinary user cannot run this Python and this awf, or None when it can."""
    words = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", "--"]
    done = subprocess.run(
        [*words, sys.executable, "-c", "import awf"], capture_output=True, text=True, cwd="/", timeout=60
    )
    return None if done.returncode == 0 else done.stderr.strip()[-300:] or f"exit code {done.returncode}"


# awf's operators: root and an ordinary user where the suite runs as root (as CI does); the user
# running it, where that is an ordinary user.
OPERATORS = ["root", "user"] if os.getuid() == 0 else ["user"]


@pytest.fixture(params=OPERATORS)
def operator(request: pytest.FixtureRequest) -> Iterator[Operator]:
    """awf's operator, and a world of their own to run it in. As root, the ordinary user is the one
    .ci/escape-user makes."""
    who = request.param
    if who == "root":
        uid, gid = 0, 0
    elif os.getuid() == 0:
        try:
            user = pwd.getpwnam(USER)
        except KeyError:
            _missing(f"there is no user {USER}: as root, .ci/escape-user installs it")
        problem = _can_run_as(user)
        if problem:
            _missing(f"{USER} cannot run {sys.executable} with awf ({problem}): as root, .ci/escape-user installs it")
        uid, gid = user.pw_uid, user.pw_gid
    else:
        uid, gid = os.getuid(), os.getgid()
    base = Path(tempfile.mkdtemp(prefix="awf-escape-"))
    base.chmod(0o755)
    try:
        yield Operator(who, base, uid, gid)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _missing(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(why)  # in CI a skip would hide an escape never tried
    pytest.skip(why)


@pytest.fixture
def outside_process() -> Iterator[subprocess.Popen[bytes]]:
    """A process of the machine's, outside every sandbox."""
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        yield sleeper
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback port that is not the model's, with a server on it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server
    finally:
        server.close()


def fingerprint(paths: list[Path]) -> dict[str, str]:
    """What each file under `paths` holds and how it may be used, to tell that nothing changed."""
    seen: dict[str, str] = {}
    for root in paths:
        if root.is_file() or root.is_symlink():
            files = [root]
        elif root.is_dir():
            files = sorted(path for path in root.rglob("*") if path.is_file() or path.is_symlink())
        else:
            seen[str(root)] = "absent"
            continue
        for path in files:
            if path.is_symlink():
                seen[str(path)] = "link to " + os.readlink(path)
            else:
                mode = oct(path.stat().st_mode)
                seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() + " " + mode
    return seen


def what_runs_outside(operator: Operator) -> list[Path]:
    project = operator.project
    return [
        operator.home,
        operator.outside,
        project / "flows" / "escape.py",
        project / "flows" / "helper.py",
        project / ".git" / "hooks",
        project / ".git" / "config",
        project / ".git" / "info",
        operator.run_dir("other"),
        Path(MARKER),
    ]


def make_other_run(operator: Operator) -> None:
    """Another run in the same project, whose record no agent of this one may read or write."""
    runtime = {"harness": "exec", "command": ["/bin/sh", "-c", "cat > /dev/null; awf answer '{}'"]}
    done = operator.awf("run", "flows/escape.py", "--id", "other", env={"ESCAPE_RUNTIME": json.dumps(runtime)})
    assert done.code == 0, done.stderr


def profile_args(operator: Operator, profile: str, extra: dict[str, Any] | None = None) -> list[str]:
    if profile != "profile":
        return ["--sandbox", profile]
    (operator.project / "out").mkdir(exist_ok=True)
    operator.chown(operator.project / "out")
    given = {"read": [".", str(operator.outside)], "write": ["./out"], **(extra or {})}
    path = operator.base / "profile.json"
    path.write_text(json.dumps(given))
    operator.chown(path)
    return ["--sandbox", str(path)]


class SocketServer:
    """A unix socket outside, in a folder a profile lets agents read, that counts who connects."""

    def __init__(self, path: Path, uid: int, gid: int) -> None:
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        os.chown(path, uid, gid)
        path.chmod(0o777)
        self.server.listen(8)
        self.server.settimeout(0.2)

    def connections(self) -> int:
        count = 0
        try:
            while True:
                self.server.accept()[0].close()
                count += 1
        except OSError:
            return count


def record_tally(request: pytest.FixtureRequest, who: str, profile: str, tried: int, held: int) -> None:
    """The figures the suite's summary prints: escapes tried and held, per profile and operator.
    Called as a test's last line, when every assertion about its escapes has held."""
    cache = request.config.cache
    if cache is None:
        return
    name = hashlib.sha256(f"{request.node.nodeid}-{os.getpid()}".encode()).hexdigest()[:16]
    figures = {"who": who, "profile": profile, "tried": tried, "held": held}
    (cache.mkdir("awf-escapes") / f"{name}.json").write_text(json.dumps(figures))


@pytest.mark.parametrize(
    ("profile", "placement"),
    # In a pane the agent has a terminal, and the same sandbox: once is enough.
    [("workspace", "headless"), ("read-only", "headless"), ("profile", "headless"), ("workspace", "pane")],
)
def test_an_agent_that_tries_every_way_out_gets_nowhere(
    operator: Operator,
    profile: str,
    placement: str,
    outside_process: subprocess.Popen[bytes],
    listener: socket.socket,
    request: pytest.FixtureRequest,
) -> None:
    if placement == "pane" and shutil.which("tmux") is None:
        _missing("tmux is not installed (apt-get install tmux)")
    make_other_run(operator)
    sock = SocketServer(operator.outside / "daemon.sock", operator.uid, operator.gid)
    project = operator.project
    context = {
        "system": "/etc",
        "install": sys.prefix,
        "records_cover": str(project / ".awf"),
        "other_run": str(operator.run_dir("other") / "run.jsonl"),
        "own_run": str(operator.run_dir("battery") / "run.jsonl"),
        "victim": str(operator.outside / "victim.txt"),
        "secret": str(operator.home / ".ssh" / "id_ed25519"),
        "socket": str(operator.outside / "daemon.sock"),
        "port": str(listener.getsockname()[1]),
        "pid": str(outside_process.pid),
        "workflow": str(project / "flows" / "escape.py"),
        "neighbour": str(project / "flows" / "helper.py"),
        "workflow_dir": str(project / "flows"),
        "git": str(project / ".git"),
        "awf_dir": str(project / ".awf"),
    }
    before = fingerprint(what_runs_outside(operator))
    runtime: dict[str, Any] = {
        "harness": "exec",
        "command": [sys.executable, str(ATTACKER), json.dumps(context), *BATTERY],
    }
    env = {"ESCAPE_RUNTIME": json.dumps(runtime)}
    if placement == "pane":
        runtime["placement"] = "pane"
        env = {"ESCAPE_RUNTIME": json.dumps(runtime), "AWF_TMUX_SOCKET": f"awf-escape-{os.getpid()}"}
    try:
        done = operator.awf("run", "flows/escape.py", "--id", "battery", *profile_args(operator, profile), env=env)
    finally:
        if placement == "pane":
            operator.run(["tmux", "-L", env["AWF_TMUX_SOCKET"], "kill-server"])

    assert done.code == 0, done.stderr
    [turn] = operator.value("battery")
    assert turn["outcome"] == "answered", turn
    results: dict[str, str] = turn["value"]
    got_out = {name: result for name, result in results.items() if not result.startswith("held")}
    assert got_out == {name: "ok" for name in MUST_WORK[profile]}, got_out
    assert fingerprint(what_runs_outside(operator)) == before
    assert sock.connections() == 0
    assert outside_process.poll() is None and _state(outside_process.pid) != "T"
    escapes = [name for name in results if name not in MUST_WORK[profile]]
    where = profile if placement == "headless" else "workspace, in a pane"
    record_tally(request, operator.who, where, len(escapes), sum(results[name].startswith("held") for name in escapes))


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2]


PLANT_NEXT_TURN = """
import json, os, subprocess, sys
sys.stdin.read()
folder = os.environ["AWF_AGENT_DIR"]
outside = sys.argv[1]
turn = int(os.environ.get("AWF_TURN", "1"))
if turn == 1:
    # Where awf will make turn 2's folder, and in it the files awf writes and reads.
    os.symlink(outside, os.path.join(folder, "turn-2"))
    subprocess.run(["awf", "answer", "{}"], check=True)
else:
    subprocess.run(["awf", "answer", json.dumps({"turn": turn})], check=True)
"""

PLANT_OWN_FILES = """
import json, os, sys
sys.stdin.read()
turn = os.path.join(os.environ["AWF_AGENT_DIR"], "turn-1")
outside = sys.argv[1]
how = sys.argv[2]
if how == "streams":
    # The files of the recovery delivery, and its own stderr, which awf reads once it exits.
    for name in ("2.stdout.jsonl", "2.stderr.txt", "2.prompt.txt"):
        os.symlink(os.path.join(outside, "victim.txt"), os.path.join(turn, name))
    os.replace(os.path.join(turn, "1.stderr.txt"), os.path.join(turn, "kept.txt"))
    os.symlink(os.path.join(outside, "victim.txt"), os.path.join(turn, "1.stderr.txt"))
elif how == "answer":
    # Its answer: a file of the operator's, which happens to hold a JSON object.
    os.symlink(os.path.join(outside, "answer.json"), os.path.join(turn, "outcome.json"))
elif how == "fifo":
    os.mkfifo(os.path.join(turn, "outcome.json"))
elif how == "garbage":
    with open(os.path.join(turn, "outcome.json"), "w") as file:
        file.write("{not json")
"""


def test_a_link_planted_where_awf_makes_the_next_turn_is_set_aside_and_never_followed(
    operator: Operator, request: pytest.FixtureRequest
) -> None:
    script = operator.project / "plant.py"
    script.write_text(textwrap.dedent(PLANT_NEXT_TURN))
    operator.chown(script)
    before = fingerprint(what_runs_outside(operator))
    runtime = {"harness": "exec", "command": [sys.executable, str(script), str(operator.outside)]}
    env = {"ESCAPE_RUNTIME": json.dumps(runtime), "ESCAPE_TURNS": "2"}
    done = operator.awf("run", "flows/escape.py", "--id", "links", "--sandbox", "workspace", env=env)

    assert done.code == 0, done.stderr
    assert [turn["outcome"] for turn in operator.value("links")] == ["answered", "answered"]
    assert operator.value("links")[1]["value"] == {"turn": 2}
    assert fingerprint(what_runs_outside(operator)) == before
    assert sorted(os.listdir(operator.outside)) == ["victim.txt"]
    agent = operator.run_dir("links") / "agents" / "1" / "attacker"
    [aside] = [path for path in agent.iterdir() if path.name.startswith("turn-2.found-")]
    assert aside.is_symlink()  # kept for a person to look at, never written through
    assert (agent / "turn-2" / "turn.json").is_file() and not (agent / "turn-2").is_symlink()
    record_tally(request, operator.who, "workspace", 1, 1)


@pytest.mark.parametrize("how", ["streams", "answer", "fifo", "garbage"])
def test_a_link_or_fifo_an_agent_puts_in_its_own_folder_fails_only_its_turn(
    operator: Operator, how: str, request: pytest.FixtureRequest
) -> None:
    script = operator.project / "plant.py"
    script.write_text(textwrap.dedent(PLANT_OWN_FILES))
    (operator.outside / "answer.json").write_text(
        json.dumps({"version": 1, "turn": 1, "outcome": "answered", "value": {"secret": "the operator's"}, "by": "x"})
    )
    operator.chown(operator.base)
    before = fingerprint(what_runs_outside(operator))
    runtime = {"harness": "exec", "command": [sys.executable, str(script), str(operator.outside), how]}
    done = operator.awf(
        "run", "flows/escape.py", "--id", how, "--sandbox", "workspace", env={"ESCAPE_RUNTIME": json.dumps(runtime)}
    )

    assert done.code == 0, done.stderr  # the turn failed; the stage and the attempt went on
    [turn] = operator.value(how)
    assert turn["outcome"] == "failed", turn
    expected = {
        "streams": "is a symbolic link, which awf does not follow",
        "answer": "it is a symbolic link",
        "fifo": "is a FIFO",
        "garbage": "its answer file cannot be taken",
    }[how]
    assert expected in turn["reason"], turn["reason"]
    assert "the operator's" not in json.dumps(operator.log(how))
    assert fingerprint(what_runs_outside(operator)) == before
    record_tally(request, operator.who, "workspace", 1, 1)


TAMPER = r"""
import json, os, py_compile, subprocess, sys
sys.stdin.read()
marker = sys.argv[1]
owned = f"open({marker!r}, 'a').write('ran ' + __name__ + '\\n')\n"
flows = os.path.join(os.getcwd(), "flows")
def write(path, text):
    with open(path, "w") as file:
        file.write(text)
# Modules named as ones of the standard library's and awf's own that awf imports once the workflow
# has loaded, beside the workflow.
for name in ("secrets", "hmac", "shlex", "tomllib", "uuid", "sqlite3", "pydantic", "genai_prices"):
    write(os.path.join(flows, name + ".py"), owned)
# Bytecode for the module the workflow imports, which Python takes without looking at its source.
source = os.path.join(flows, "helper_planted.py")
write(source, 'STAGE = "escape"\n' + owned)
os.makedirs(os.path.join(flows, "__pycache__"), exist_ok=True)
py_compile.compile(source, cfile=os.path.join(flows, "__pycache__", f"helper.{sys.implementation.cache_tag}.pyc"),
                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
os.remove(source)
subprocess.run(["awf", "answer", "{}"], check=True)
"""


def test_code_an_agent_leaves_beside_the_workflow_never_runs_outside(
    operator: Operator, request: pytest.FixtureRequest
) -> None:
    script = operator.project / "tamper.py"
    script.write_text(textwrap.dedent(TAMPER))
    operator.chown(script)
    marker = operator.project / "ran-outside.txt"  # the agent may write here: code it planted would too
    runtime = {"harness": "exec", "command": [sys.executable, str(script), str(marker)]}
    env = {"ESCAPE_RUNTIME": json.dumps(runtime), "ESCAPE_STOP": "1"}
    first = operator.awf("run", "flows/escape.py", "--id", "tamper", "--sandbox", "workspace", env=env)
    assert first.code == 3, first.stderr
    assert (operator.project / "flows" / "__pycache__").is_dir()  # it could write there: it is the workspace

    # The operator goes on: the workflow and what it imports load as they were, and awf imports
    # nothing of what the agent left once the workflow has loaded.
    quiet = {
        "ESCAPE_RUNTIME": json.dumps(
            {"harness": "exec", "command": ["/bin/sh", "-c", "cat >/dev/null; awf answer '{}'"]}
        )
    }
    again = operator.awf("run", "flows/escape.py", "--id", "tamper", "--continue", "--from-stage", "escape", env=quiet)
    assert again.code == 0, again.stderr
    assert not marker.exists(), marker.read_text()
    record_tally(request, operator.who, "workspace", 1, 1)


TWO_AGENTS = """
import sys

import awf

# What the builder leaves in the workspace: an `awf` that, asked for `awf answer`, answers for whoever runs it.
FORGE = (
    "import json, os, sys\\n"
    "if 'answer' in sys.argv:\\n"
    "    folder = os.environ['AWF_AGENT_DIR']\\n"
    "    turn = json.load(open(os.path.join(folder, 'agent.json')))['turn']\\n"
    "    forged = {'version': 1, 'turn': turn, 'outcome': 'answered', 'value': {'forged': True},\\n"
    "              'by': 'the agent', 'at': '2026-01-01T00:00:00Z'}\\n"
    "    json.dump(forged, open(os.path.join(folder, f'turn-{turn}', 'outcome.json'), 'w'))\\n"
)
BUILD = (
    "import subprocess, sys; sys.stdin.read(); open('awf.py', 'w').write(sys.argv[1]); "
    "subprocess.run(['awf', 'answer', '{}'], check=True)"
)


@awf.workflow(name="pair", description="A builder that writes, and a reviewer that may not.")
async def pair(wf):
    async def work():
        builder = await wf.agents.open(
            key="builder", runtime={"harness": "exec", "command": [sys.executable, "-c", BUILD, FORGE]}
        )
        await builder.run(prompt="Build.", schema={"type": "object"}, timeout=120)
        answer = "cat > /dev/null; awf answer '{\\"mine\\": true}'"
        reviewer = await wf.agents.open(
            key="reviewer", sandbox="read-only", runtime={"harness": "exec", "command": ["/bin/sh", "-c", answer]}
        )
        turn = await reviewer.run(prompt="Review.", schema={"type": "object"}, timeout=120)
        return turn.outcome.value if turn.outcome.answered else turn.outcome.reason

    return await wf.stage("review", work, result={})
"""


def test_an_agent_cannot_answer_for_another_through_a_module_it_leaves_in_the_workspace(
    operator: Operator, request: pytest.FixtureRequest
) -> None:
    (operator.project / "pair.py").write_text(textwrap.dedent(TWO_AGENTS).lstrip())
    operator.chown(operator.project / "pair.py")
    done = operator.awf("run", "pair.py", "--id", "p", "--sandbox", "workspace", "--json")

    assert done.code == 0, done.stderr
    assert (operator.project / "awf.py").exists()  # the builder left it where the reviewer works
    assert json.loads(done.stdout)["value"] == {"mine": True}
    record_tally(request, operator.who, "workspace", 1, 1)


# Each limit, a program that passes it and keeps on (as an agent's would), and the words the turn's reason names it by.
LIMITS = {
    "processes": (
        {"processes": 64},
        "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.05)\n",
        "limits.processes",
    ),
    "shm": (
        {"shm_mib": 8},
        "import time\nchunk = b'x' * 2**20\ntry:\n    with open('/dev/shm/fill', 'wb') as f:\n"
        "        while True:\n            f.write(chunk)\nexcept OSError:\n    time.sleep(300)\n",
        "limits.shm_mib",
    ),
    "tmp": (
        {"tmp_mib": 8},
        "import time\nchunk = b'x' * 2**20\ntry:\n    with open('/tmp/fill', 'wb') as f:\n"
        "        while True:\n            f.write(chunk)\nexcept OSError:\n    time.sleep(300)\n",
        "limits.tmp_mib",
    ),
    "cpu": ({"cpu_seconds": 1}, "while True:\n    pass\n", "limits.cpu_seconds"),
}


@pytest.mark.parametrize("limit", sorted(LIMITS))
def test_an_agent_past_a_limit_fails_its_turn_naming_the_limit(
    operator: Operator, limit: str, request: pytest.FixtureRequest
) -> None:
    limits, body, named = LIMITS[limit]
    script = operator.project / "hog.py"
    script.write_text("import sys\nsys.stdin.read()\n" + body)
    operator.chown(script)
    runtime = {"harness": "exec", "command": [sys.executable, str(script)]}
    started = time.monotonic()
    done = operator.awf(
        "run",
        "flows/escape.py",
        "--id",
        limit,
        *profile_args(operator, "profile", {"limits": limits}),
        env={"ESCAPE_RUNTIME": json.dumps(runtime)},
    )

    assert done.code == 0, done.stderr
    [turn] = operator.value(limit)
    assert turn["outcome"] == "failed", turn
    assert named in turn["reason"], turn["reason"]
    assert time.monotonic() - started < 90  # ended by the watch, not by the turn's timeout
    assert _left_over(str(script)) == []
    record_tally(request, operator.who, "profile", 1, 1)


def _left_over(marker: str) -> list[int]:
    """Processes whose command line names `marker`: none may outlive the turn."""
    until = time.monotonic() + 15
    while True:
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
        if not found or time.monotonic() > until:
            return found
        time.sleep(0.1)


def test_a_run_line_whose_sandbox_was_changed_is_refused_until_the_operator_says_so(
    operator: Operator, request: pytest.FixtureRequest
) -> None:
    runtime = {"harness": "exec", "command": ["/bin/sh", "-c", "cat > /dev/null; awf answer '{}'"]}
    env = {"ESCAPE_RUNTIME": json.dumps(runtime), "ESCAPE_STOP": "1"}
    first = operator.awf("run", "flows/escape.py", "--id", "edited", "--sandbox", "read-only", env=env)
    assert first.code == 3, first.stderr
    log = operator.run_dir("edited") / "run.jsonl"
    lines = log.read_text().splitlines()
    line = json.loads(lines[0])
    line["sandbox"] = None  # what an agent that could write the record would do: the next attempt unconfined
    log.write_text("\n".join([json.dumps(line), *lines[1:]]) + "\n")

    refused = operator.awf("run", "flows/escape.py", "--id", "edited", "--continue", env=env)
    assert refused.code == 2, refused.stderr
    assert "run line says --sandbox none, but its first attempt ran with --sandbox read-only" in refused.stderr
    assert [entry["kind"] for entry in operator.log("edited")].count("attempt-start") == 1

    confirmed = operator.awf("run", "flows/escape.py", "--id", "edited", "--continue", "--sandbox", "none", env=env)
    assert confirmed.code == 0, confirmed.stderr
    record_tally(request, operator.who, "read-only", 1, 1)


def test_a_killed_awf_leaves_nothing_of_its_network_behind(
    operator: Operator, listener: socket.socket, request: pytest.FixtureRequest
) -> None:
    before = set(os.listdir(tempfile.gettempdir()))
    runtime = {"harness": "exec", "command": ["/bin/sh", "-c", "cat > /dev/null; echo > out/started; sleep 300"]}
    profile = profile_args(operator, "profile", {"network": [f"127.0.0.1:{listener.getsockname()[1]}"]})
    env = operator.env({"ESCAPE_RUNTIME": json.dumps(runtime)})
    process = subprocess.Popen(
        operator.command([sys.executable, "-m", "awf", "run", "flows/escape.py", "--id", "killed", *profile], env),
        cwd=operator.project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        until = time.monotonic() + 60
        while not (operator.project / "out" / "started").exists():
            assert time.monotonic() < until, "the agent never started"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    left = {name for name in set(os.listdir(tempfile.gettempdir())) - before if name.startswith("awf-net")}
    assert left == set()
    record_tally(request, operator.who, "profile", 1, 1)
