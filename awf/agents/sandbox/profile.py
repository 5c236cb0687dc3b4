"""Sandbox profiles: what `--sandbox` and `wf.agents.open(sandbox=...)` let agents read, write and reach.

A profile is a name (`none`, `workspace`, `read-only`), a JSON file, or a dict, of three lists
and the limits (limits.py):

    {"read": ["~/.gitconfig"], "write": [".", "../shared"], "network": ["pypi.org", "files.pythonhosted.org:443"],
     "limits": {"processes": 512}}

Paths are absolute, `~/...`, or relative to the run's working directory; hosts are `host` or
`host:port` (443 when no port is given). Its JSON Schema is schemas/sandbox.schema.json. Every
agent in a sandbox also reads the system folders and the programs it runs, writes its own home,
and reaches its model's API: sandbox.py adds those. A `write` path that holds what runs outside
every sandbox (your home, a system folder, awf's own install) is refused.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...record.entries import SandboxRecord
from . import limits as sandbox_limits
from .limits import Limits

NONE = "none"
# The built-in profiles, as a file would say them.
BUILT_IN: dict[str, dict[str, list[str]]] = {
    "workspace": {"read": [], "write": ["."], "network": []},
    "read-only": {"read": ["."], "write": [], "network": []},
}
NAMES = (NONE, *BUILT_IN)
_KEYS = ("profile", "description", "read", "write", "network", "limits")
# Folders that hold what runs outside a sandbox: no `write` path holds one, nor lies in the first few.
_SYSTEM_CODE = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/boot")
_SYSTEM_HOLDERS = ("/var", "/opt", "/root", "/home", "/srv")
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*)(?::([0-9]{1,5}))?")
HTTPS_PORT = 443


class ProfileError(Exception):
    """A profile that cannot be used: every problem with it, one a line."""

    def __init__(self, where: str, problems: list[str]) -> None:
        self.where = where
        self.problems = problems
        super().__init__(f"{where} cannot be used:\n" + "\n".join(f"  - {problem}" for problem in problems))


@dataclass(frozen=True)
class Profile:
    """A profile made concrete for one run: absolute paths, hosts with their ports."""

    name: str  # how it was given: workspace, read-only, review.json, or "agent" for a dict
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    network: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)

    def as_record(self) -> SandboxRecord:
        """The run line's `sandbox`."""
        return {
            "profile": self.name,
            "read": list(self.read),
            "write": list(self.write),
            "network": list(self.network),
            "limits": self.limits.as_record(),
        }

    def same_rules(self, other: Profile) -> bool:
        mine = (self.read, self.write, self.network, self.limits)
        return mine == (other.read, other.write, other.network, other.limits)

    def beyond(self, limit: Profile) -> list[str]:
        """What this profile allows that `limit` does not, one line each; empty when it is within it."""
        problems = []
        for path in self.write:
            if not _inside(path, limit.write):
                problems.append(f"it writes {path}, which the run's sandbox ({limit.name}) does not let agents write")
        for path in self.read:
            if not _inside(path, limit.read + limit.write):
                problems.append(f"it reads {path}, which the run's sandbox ({limit.name}) does not let agents read")
        for host in self.network:
            if host not in limit.network:
                problems.append(f"it reaches {host}, which the run's sandbox ({limit.name}) does not let agents reach")
        return problems


def from_record(record: SandboxRecord | None) -> Profile | None:
    """The profile a run's line recorded, or None for a run without a sandbox."""
    if record is None:
        return None
    return Profile(
        str(record.get("profile") or "recorded"),
        tuple(record.get("read") or ()),
        tuple(record.get("write") or ()),
        tuple(record.get("network") or ()),
        sandbox_limits.from_record(record.get("limits")),
    )


def parse(given: str, cwd: Path, made: Path | None = None) -> Profile | None:
    """`--sandbox GIVEN`: None for `none`, else the profile; ProfileError listing every problem.

    A name that is not built in is a JSON file, relative to the current folder. `made`: a folder
    awf makes as the run's first attempt starts (its worktree), where a write need not exist yet."""
    if given == NONE:
        return None
    if given in BUILT_IN:
        return _make(given, BUILT_IN[given], cwd, f"--sandbox {given}", made)
    where = f"--sandbox {given}"
    path = Path(given).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileError(
            where, [f"there is no such file, and it is not a profile's name ({', '.join(NAMES)})"]
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ProfileError(where, [f"the file cannot be read: {error}"]) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        problem = f"it is not JSON: {error.msg} at line {error.lineno} column {error.colno}"
        raise ProfileError(where, [problem]) from None
    return _make(str(path.absolute()), data, cwd, where, made)


def from_spec(spec: Any, cwd: Path, where: str) -> Profile | None:
    """`wf.agents.open(sandbox=SPEC)`: a profile's name, or a dict of read, write and network lists."""
    if isinstance(spec, str):
        if spec == NONE:
            return None
        if spec in BUILT_IN:
            return _make(spec, BUILT_IN[spec], cwd, where)
        raise ProfileError(where, [f"{spec!r} is not a profile: give one of {', '.join(NAMES)}, or a dict"])
    return _make("agent", spec, cwd, where)


def _make(name: str, data: Any, cwd: Path, where: str, made: Path | None = None) -> Profile:
    """Check a profile as written, listing every problem, and make its paths absolute."""
    if not isinstance(data, Mapping):
        raise ProfileError(where, [f"a profile is a JSON object of read, write and network lists, not {data!r}"])
    problems = [
        f"{key!r} is not a profile's field: it has {', '.join(_KEYS[2:])} (and a description)"
        for key in data
        if key not in _KEYS
    ]
    lists: dict[str, list[str]] = {}
    for key in ("read", "write", "network"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            problems.append(f"{key} is a list of non-empty strings, not {value!r}")
            value = []
        lists[key] = value
    if "description" in data and not isinstance(data["description"], str):
        problems.append(f"description is a string, not {data['description']!r}")
    write = [_absolute(path, cwd) for path in lists["write"]]
    read = [_absolute(path, cwd) for path in lists["read"]]
    for path in write:
        if not Path(path).exists() and not (made is not None and Path(path).is_relative_to(made)):
            problems.append(f"write: {path} does not exist; make it first, or leave it out")
        else:
            held = _runs_outside(path)
            if held:
                problems.append(
                    f"write: {path} holds {held}: agents could change what runs outside their sandbox; "
                    "give the project's own folder"
                )
    limits = sandbox_limits.parse(data.get("limits"), problems)
    network = []
    for entry in lists["network"]:
        host = _host(entry)
        if host is None:
            problems.append(f"network: {entry!r} is not a host or host:port (such as pypi.org or example.com:8443)")
        else:
            network.append(host)
    if problems:
        raise ProfileError(where, problems)
    return Profile(name, tuple(dict.fromkeys(read)), tuple(dict.fromkeys(write)), tuple(dict.fromkeys(network)), limits)


def _runs_outside(path: str) -> str | None:
    """What of the operator's `path` holds that runs outside a sandbox (said for a refusal), or None."""
    home = os.path.realpath(os.path.expanduser("~"))
    if home != "/" and Path(home).is_relative_to(path):
        return f"your home folder ({home})"
    if home != "/" and Path(path).is_relative_to(home):
        first = Path(path).relative_to(home).parts[:1]
        if first and first[0].startswith("."):
            return f"your settings ({home}/{first[0]}), which your shell and tools run"
    for folder in ("/", *_SYSTEM_CODE, *_SYSTEM_HOLDERS):
        if Path(folder).is_relative_to(path):
            return f"the system folder {folder}"
    for folder in _SYSTEM_CODE:
        if Path(path).is_relative_to(folder):
            return f"a part of the system folder {folder}"
    for install in dict.fromkeys([sys.prefix, sys.base_prefix]):
        real = os.path.realpath(install)
        if Path(real).is_relative_to(path) or Path(path).is_relative_to(real):
            return f"awf's own install ({real})"
    return None


def _absolute(path: str, cwd: Path) -> str:
    return str((cwd / Path(path).expanduser()).resolve())


def _host(entry: str) -> str | None:
    """`host` or `host:port` with its port: example.com:443; None when it is neither."""
    found = _HOST.fullmatch(entry.strip())
    if found is None:
        return None
    port = int(found.group(2)) if found.group(2) else HTTPS_PORT
    if not 0 < port < 65536:
        return None
    return f"{found.group(1).lower()}:{port}"


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(Path(path).is_relative_to(root) for root in roots)
