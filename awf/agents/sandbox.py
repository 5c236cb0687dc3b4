"""Agents in a sandbox: every process of a sandboxed agent runs under bubblewrap (`bwrap`).

What a process sees inside (see docs/sandboxes.md):

- the system folders (/usr, /etc, /bin, /lib...), read-only; nothing else of the machine's tree:
  no /home, /root, /tmp, /mnt, /srv, /opt, nor other projects;
- the programs it runs, read-only, wherever they are installed: awf itself (its interpreter, its
  virtual environment and its package, for `awf answer`), the agent's CLI and node;
- the profile's `read` paths read-only, its `write` paths writable (the working directory for
  `workspace`), and of the runs' records only the agent's own folder, writable: its answer
  channel, its fresh home (HOME, and the harness's home in it) and its temp folder;
- a network of its own with only loopback; sandbox_relay.py and sandbox_net.py carry the model's
  port and an allowlisting proxy out;
- its own pid namespace, ended with the process (--die-with-parent), and a clean environment:
  the locale, the terminal, what `awf answer` needs and what the harness says its program needs.

Anything else in the root is read-only, so a write outside the allowed paths fails.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from .sandbox_net import Gateway
from .sandbox_profile import Profile

SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
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
NET_DIR = "/run/awf-net"  # where the gateway's sockets are inside
PROXY_PORT = 3128
_LOOPBACK_NAMES = ("localhost",)


def unavailable() -> str | None:
    """Why bubblewrap cannot confine agents here (with what to do), or None when it can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return f"bubblewrap is not installed (there is no bwrap on PATH); {INSTALL}"
    return _cannot_run(bwrap)


@functools.cache
def _cannot_run(bwrap: str) -> str | None:
    """Whether `bwrap` makes a sandbox here: tried once a process."""
    probe = [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return f"{bwrap} cannot be run: {error}; {INSTALL}"
    if done.returncode != 0:
        said = done.stderr.strip() or f"it exited with code {done.returncode}"
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
    """One agent's sandbox: how each of its processes is started, and its way out to the network."""

    def __init__(
        self,
        profile: Profile,
        *,
        cwd: Path,
        agent_dir: Path,
        records: Path,
    ) -> None:
        self.profile = profile
        self.cwd = cwd
        self.agent_dir = agent_dir
        self.records = records  # the runs' folder: hidden, but for the agent's own
        self.home: Path = agent_dir / "home"
        self.tmp: Path = agent_dir / "tmp"
        for folder in (self.home, self.tmp):
            folder.mkdir(mode=0o700, exist_ok=True)
        self.env: dict[str, str] = {}  # what the harness's program needs: its home, its key, its model
        self.endpoints: list[str] = []  # host:port of its model's API
        self.gateway: Gateway | None = None
        self._relay: list[str] = []
        self._proxy = False

    def open_network(self) -> None:
        """Serve the sockets its processes reach the network through: made once, at the first process."""
        if self.gateway is not None:
            return
        self.gateway = Gateway()
        allowed = list(dict.fromkeys([*self.endpoints, *self.profile.network]))
        remote = False
        for number, endpoint in enumerate(allowed):
            host, _, port = endpoint.rpartition(":")
            if not is_loopback(host):
                remote = True
                continue
            # The same address inside as outside: a model on 127.0.0.1:8080 is reached as 127.0.0.1:8080.
            address = "127.0.0.1" if host in _LOOPBACK_NAMES else host.strip("[]")
            path = self.gateway.forward(f"f{number}", address, int(port))
            self._relay.append(f"{address if ':' not in address else f'[{address}]'}:{port}={NET_DIR}/{path.name}")
        if remote:
            path = self.gateway.proxy("proxy", set(allowed))
            self._relay.append(f"127.0.0.1:{PROXY_PORT}={NET_DIR}/{path.name}")
            self._proxy = True

    def close(self) -> None:
        if self.gateway is not None:
            self.gateway.close()

    def wrap(self, command: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """The command that runs `command` in the sandbox, and the clean environment to give it."""
        self.open_network()
        bwrap = shutil.which("bwrap") or "bwrap"
        program = _resolve(command[0], env, self.cwd)
        inside_env = self._env(env, program)
        args = [bwrap, "--die-with-parent", "--unshare-all", "--hostname", "awf-sandbox"]
        for folder in SYSTEM:
            if os.path.islink(folder):
                args += ["--symlink", os.readlink(folder), folder]
            elif os.path.isdir(folder):
                args += ["--ro-bind", folder, folder]
        args += ["--dev", "/dev", "--proc", "/proc"]
        # The script an interpreter runs (python3 /opt/agents/review.py) is read, as the program is;
        # no other file the command names.
        scripts = [word for word in command[1:2] if os.path.isabs(word) and os.path.isfile(word)]
        for kind, path in _in_order(self._mounts(program, scripts)):
            args += [kind, path] if kind == "--tmpfs" else [kind, path, path]
        if self.gateway is not None and self._relay:
            args += ["--bind", str(self.gateway.dir), NET_DIR]
        args += ["--remount-ro", str(self.records), "--remount-ro", "/", "--chdir", str(self.cwd), "--"]
        if self._relay:
            relay = str(Path(__file__).with_name("sandbox_relay.py"))
            args += [sys.executable, "-I", "-S", relay, *self._relay, "--"]
        return [*args, program, *command[1:]], inside_env

    def _mounts(self, program: str, scripts: list[str]) -> list[tuple[str, str]]:
        mounts: list[tuple[str, str]] = []
        for path in _awf_paths() + _program_paths(program) + scripts:
            mounts.append(("--ro-bind", path))
        for path in self.profile.read:
            mounts.append(("--ro-bind-try", path))
        writes = set(self.profile.write)
        for path in self.profile.write:
            mounts.append(("--bind", path))
        if not any(Path(str(self.cwd)).is_relative_to(path) for path in writes):
            mounts.append(("--ro-bind", str(self.cwd)))
        # The runs' records are hidden, other agents' homes with them: only the agent's own folder shows.
        mounts.append(("--tmpfs", str(self.records)))
        mounts.append(("--ro-bind", str(self.agent_dir.parent / ".bin")))  # the `awf` shim
        mounts.append(("--bind", str(self.agent_dir)))
        return [(kind, path) for kind, path in mounts if not _is_system(path)]

    def _env(self, env: Mapping[str, str], program: str) -> dict[str, str]:
        clean = {key: os.environ[key] for key in KEPT if key in os.environ}
        clean.update({key: value for key, value in env.items() if key.startswith("AWF_") or key in KEPT})
        clean.update(self.env)
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
    """The folders a program needs beside itself: its npm package (with its scope), node's install."""
    paths = []
    for each in (program, shutil.which("node")):
        if not each or not os.path.isabs(each):
            continue
        real = Path(os.path.realpath(each))
        parts = real.parts
        if "node_modules" in parts:
            at = len(parts) - 1 - parts[::-1].index("node_modules")
            package = parts[: at + 2] if len(parts) > at + 1 else parts
            paths.append(str(Path(*package)))
        elif each != program and real.parent.name == "bin":
            paths.append(str(real.parent.parent))  # node installed under a prefix: its lib comes too
        else:
            paths.append(str(real))
    return paths


def _is_system(path: str) -> bool:
    return any(Path(path).is_relative_to(folder) for folder in SYSTEM if os.path.isdir(folder))


def _in_order(mounts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Outer folders first, so a narrower mount (the agent's folder in a read-only tree) lands on top."""
    seen: dict[str, str] = {}
    for kind, path in mounts:
        seen[path] = kind  # the last word on a path wins
    return sorted(((kind, path) for path, kind in seen.items()), key=lambda mount: len(Path(mount[1]).parts))
