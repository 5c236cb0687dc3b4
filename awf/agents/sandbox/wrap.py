"""Agents in a sandbox: every process of a sandboxed agent runs under bubblewrap (`bwrap`).

What a process has inside (see docs/sandboxes.md, whose threat model says what each part stops):

- no capabilities and no way to gain any (--cap-drop ALL, no new privileges, no further user
  namespaces), whoever runs awf, root included; a user, pid, network, IPC and UTS namespace of
  its own, ended with the program that started it (--die-with-parent);
- the system folders read-only, with the files that hold the machine's secrets emptied; the
  programs it runs, read-only, wherever they are installed; the profile's paths; of the runs'
  records only its own folder; inside what it writes, what runs outside kept read-only
  (mounts.py);
- a seccomp filter (seccomp.py): no unix socket, so none outside is reached;
- limits (limits.py): processes, open files, CPU, the size of /tmp and /dev/shm;
- a network of its own with only loopback; init.py hands each connection to awf's gateway
  outside (net.py), which carries it to the model's port or an allowlisting proxy;
- a clean environment: the locale, the terminal, the git identity commits are made under, what
  `awf answer` needs and what the harness says its program needs.

Each process starts through launch.py, which opens what lies in folders agents write
without following links, connects the gateway, and becomes bubblewrap.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from ...record.files import ensure_dir
from ..reaper import environment_kept
from . import seccomp
from .limits import MIB, Watch, init_options
from .mounts import Layout, plan
from .net import Gateway, Route
from .profile import Profile

SYSTEM_PATH = ("/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin", "/bin", "/sbin")
INSTALL = (
    "install bubblewrap: sudo apt-get install -y bubblewrap (Debian, Ubuntu), sudo dnf install bubblewrap "
    "(Fedora), sudo pacman -S bubblewrap (Arch)"
)
USERNS = (
    "turn user namespaces on: sudo sysctl -w kernel.unprivileged_userns_clone=1, and on Ubuntu 24.04 and "
    "later sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
)
# What every sandboxed process keeps of awf's environment, besides awf's own AWF_ variables.
KEPT = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "COLORTERM", "NO_COLOR", "TZ")
PROXY_PORT = 3128
# Namespaces of its own, no capabilities whoever runs awf, and no way to make a user namespace
# (where it would have them again) inside.
NAMESPACES = ("--die-with-parent", "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL")
_LOOPBACK_NAMES = ("localhost",)


def unavailable() -> str | None:
    """Why bubblewrap cannot confine agents here (with what to do), or None when it can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return f"bubblewrap is not installed (there is no bwrap on PATH); {INSTALL}"
    return seccomp.supported() or _cannot_run(bwrap)


@functools.cache
def _cannot_run(bwrap: str) -> str | None:
    """Whether `bwrap` makes a sandbox here, as awf makes them: tried once a process."""
    probe = [bwrap, *NAMESPACES, "--ro-bind", "/", "/", "--proc", "/proc", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return f"{bwrap} cannot be run: {error}; {INSTALL}"
    if done.returncode != 0:
        said = done.stderr.strip() or f"it exited with code {done.returncode}"
        if "Unknown option" in said or "unrecognized option" in said:
            return f"{bwrap} is too old to confine agents as awf does ({said}): bubblewrap 0.8.0 or newer is needed"
        return f"{bwrap} cannot make a sandbox here ({said}); {USERNS}"
    return None


def endpoint_of(url: str) -> str | None:
    """`https://api.example.com/v1` as `api.example.com:443`; None when it names no host."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname.lower()
    return f"{host}:{port}"


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class AgentSandbox:
    """One agent's sandbox: how each of its processes is started, its way out to the network, and
    the watch on its limits."""

    def __init__(
        self,
        profile: Profile,
        *,
        cwd: Path,
        agent_dir: Path,
        records: Path,
        writers: tuple[str, ...] = (),
        protected: tuple[str, ...] = (),
    ) -> None:
        self.profile = profile
        self.cwd = cwd
        self.agent_dir = agent_dir
        self.records = records  # the runs' folder: hidden, but for the agent's own
        self.writers: tuple[str, ...] = tuple(dict.fromkeys([*writers, *profile.write]))  # what any agent may write
        self.protected = protected  # files that run outside: read-only inside
        self.home: Path = agent_dir / "home"
        self.tmp: Path = agent_dir / "tmp"
        for folder in (self.home, self.tmp):
            ensure_dir(folder)
        self.env: dict[str, str] = {}  # what the harness's program needs: its home, its key, its model
        self.endpoints: list[str] = []  # host:port of its model's API
        self.gateway: Gateway | None = None
        self.watch: Watch = Watch(profile.limits)
        self._listen: list[str] = []
        self._proxy = False
        self._identity: dict[str, str] | None = None

    def open_network(self) -> None:
        """Start the gateway its processes reach the network through: once, at the first process."""
        if self.gateway is not None or not (self.endpoints or self.profile.network):
            return
        allowed = list(dict.fromkeys([*self.endpoints, *self.profile.network]))
        routes: list[Route] = []
        remote = False
        for endpoint in allowed:
            host, _, port = endpoint.rpartition(":")
            if not is_loopback(host):
                remote = True
                continue
            # The same address inside as outside: a model on 127.0.0.1:8080 is reached as 127.0.0.1:8080.
            address = "127.0.0.1" if host in _LOOPBACK_NAMES else host.strip("[]")
            self._listen.append(f"{address if ':' not in address else f'[{address}]'}:{port}={len(routes)}")
            routes.append(Route(address, int(port)))
        if remote:
            self._listen.append(f"127.0.0.1:{PROXY_PORT}={len(routes)}")
            routes.append(Route(None, PROXY_PORT, frozenset(allowed)))
            self._proxy = True
        self.gateway = Gateway(routes)

    def close(self) -> None:
        """The attempt is over: no more connections out. Its processes were ended with their agents
        (a pane kept for a person to read stays, with no way out)."""
        if self.gateway is not None:
            self.gateway.close()

    def wrap(self, command: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """The command that runs `command` in the sandbox, and the clean environment to give it."""
        self.open_network()
        program = _resolve(command[0], env, self.cwd)
        inside_env = self._env(env, program)
        # The script an interpreter runs (python3 /opt/agents/review.py) is read, as the program is;
        # no other file the command names.
        scripts = [word for word in command[1:2] if os.path.isabs(word) and os.path.isfile(word)]
        limits = self.profile.limits
        mounts, hidden = plan(
            Layout(
                writes=self.profile.write,
                reads=[*_awf_paths(), *_program_paths(program), *scripts, *self.profile.read],
                cwd=str(self.cwd),
                agent_dir=str(self.agent_dir),
                shim_dir=str(self.agent_dir.parent / ".bin"),
                records=str(self.records),
                protected=self.protected,
                writers=self.writers,
                tmp_bytes=limits.tmp_mib * MIB if limits.tmp_mib else None,
                shm_bytes=limits.shm_mib * MIB if limits.shm_mib else None,
            )
        )
        init = [sys.executable, "-I", "-S", str(Path(__file__).with_name("init.py")), *init_options(limits)]
        init += environment_kept(inside_env)
        for address in self._listen:
            init += ["--listen", address]
        spec = {
            "bwrap": shutil.which("bwrap") or "bwrap",
            "head": [*NAMESPACES, "--hostname", "awf-sandbox"],
            "mounts": [mount.as_list() for mount in mounts],
            "tail": ["--remount-ro", hidden, "--remount-ro", "/", "--chdir", str(self.cwd)],
            "seccomp": seccomp.program().hex(),
            "gateway": self.gateway.name if self.gateway is not None else None,
            "init": init,
            "command": [program, *command[1:]],
        }
        launcher = str(Path(__file__).with_name("launch.py"))
        return [sys.executable, "-I", "-S", launcher, json.dumps(spec)], inside_env

    def _env(self, env: Mapping[str, str], program: str) -> dict[str, str]:
        clean = {key: os.environ[key] for key in KEPT if key in os.environ}
        clean.update({key: value for key, value in env.items() if key.startswith("AWF_") or key in KEPT})
        clean.update(self.env)
        if self._identity is None:
            self._identity = git_identity(self.cwd, env)
        clean.update(self._identity)
        clean["HOME"] = str(self.home)
        clean["TMPDIR"] = str(self.tmp)
        path = [str(self.agent_dir.parent / ".bin"), str(Path(program).parent)]
        node = shutil.which("node", path=env.get("PATH"))
        if node:
            path.append(str(Path(os.path.realpath(node)).parent))
        clean["PATH"] = os.pathsep.join(dict.fromkeys([*path, *SYSTEM_PATH]))
        if self._proxy:
            proxy = f"http://127.0.0.1:{PROXY_PORT}"
            for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
                clean[name] = proxy
            clean["NO_PROXY"] = clean["no_proxy"] = "localhost,127.0.0.1,::1"
        return clean


def git_identity(cwd: Path, env: Mapping[str, str]) -> dict[str, str]:
    """Who the agent's commits are by: the home inside is fresh, so the GIT_AUTHOR_ and
    GIT_COMMITTER_ variables awf was given, or else the user's `user.name` and `user.email`, go in
    as variables. Reading config runs nothing the folder holds, unlike most git commands."""
    identity: dict[str, str] = {}
    for key in ("name", "email"):
        configured: str | None = None
        for variable in (f"GIT_AUTHOR_{key.upper()}", f"GIT_COMMITTER_{key.upper()}"):
            value = env.get(variable)
            if not value:
                if configured is None:
                    configured = _git_config(cwd, f"user.{key}") or ""
                value = configured
            if value:
                identity[variable] = value
    return identity


def _git_config(cwd: Path, key: str) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, "config", "--get", key], cwd=cwd, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def _resolve(program: str, env: Mapping[str, str], cwd: Path) -> str:
    """The program as a real path: a name is looked up on the PATH awf gives the agent."""
    if os.sep in program:
        return os.path.realpath(cwd / program)
    found = shutil.which(program, path=env.get("PATH"))
    return os.path.realpath(found) if found else program


def _awf_paths() -> list[str]:
    """What `awf answer` needs inside: the interpreter, its environment and awf's own package."""
    from importlib import resources

    paths = [sys.prefix, sys.base_prefix, os.path.realpath(sys.executable)]
    # An editable install maps awf.schemas to a folder beside the package: both come.
    paths += [os.path.realpath(str(resources.files(package))) for package in ("awf", "awf.schemas")]
    return [path for path in dict.fromkeys(paths) if os.path.exists(path)]


def _program_paths(program: str) -> list[str]:
    """The folders a program needs beside itself: the node_modules its npm package is in (npm puts
    a package's dependencies beside it there, in an install into a prefix), node's install."""
    paths = []
    for each in (program, shutil.which("node")):
        if not each or not os.path.isabs(each):
            continue
        real = Path(os.path.realpath(each))
        parts = real.parts
        if "node_modules" in parts:
            outermost = parts.index("node_modules")
            paths.append(str(Path(*parts[: outermost + 1])))
        elif each != program and real.parent.name == "bin":
            paths.append(str(real.parent.parent))  # node installed under a prefix: its lib comes too
        else:
            paths.append(str(real))
    return paths
