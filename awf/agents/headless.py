"""What the harnesses of agent CLIs share: a coding agent's CLI run headless for one delivery.

Each delivery starts the CLI once, with the message on stdin and its JSON lines going to a file
in the turn's folder, and reads those lines as they come (a harness may end the process on what
it sees). It also finds the program (on PATH, or where AWF_CLAUDE / AWF_CODEX say) and words
what went wrong when the CLI broke before it said anything of use.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..record.files import open_read, write_atomic
from .harness import Message, Session
from .output import read_end

POLL = 0.1
STDERR_TAIL = 2000
STDERR_HEAD = 16384  # what of stderr is searched for the CLI's refusal of an option, besides the tail


def find_program(name: str, variable: str, env: Mapping[str, str], install: str) -> tuple[str | None, str | None]:
    """(the program to run, None) or (None, what to do about it): `variable` wins over PATH."""
    configured = env.get(variable)
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            return None, (
                f"{variable} is {configured}, which is not an executable file: "
                f"fix it, or unset it to use {name} on PATH"
            )
        return str(path), None
    found = shutil.which(name, path=env.get("PATH"))
    if found is None:
        return None, f"{name} is not installed: it is not on PATH. {install}, or set {variable} to its path"
    return found, None


def copy_private(source: Path, target: Path) -> None:
    """Copy a credential or a setting into a sandboxed agent's home, readable by its owner only;
    nothing when there is none."""
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    write_atomic(target, text)
    target.chmod(0o600)


def version_of(program: str) -> str | None:
    """What `program --version` prints first (on stdout, or on stderr as pi does when stdout is not
    a terminal), or None."""
    try:
        done = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    words = (done.stdout.strip() or done.stderr.strip()).split()
    return next((word for word in words if word[:1].isdigit()), None)


@dataclass
class Ran:
    """One delivery's CLI run: its exit code (None when a watcher ended it), its JSON lines, its stderr file."""

    code: int | None
    events: list[dict[str, Any]]
    stderr: Path
    ended_because: str | None = None
    raw: list[str] = field(default_factory=list)  # lines of stdout that were not JSON

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event.get("type") == kind]

    def stderr_tail(self) -> str:
        return read_end(self.stderr, STDERR_TAIL).strip()

    def stderr_head(self) -> str:
        """The start of its stderr, where a CLI's usage text begins (longer than the tail)."""
        try:
            with open_read(self.stderr) as handle:
                return handle.read(STDERR_HEAD).decode("utf-8", errors="replace")
        except OSError:
            return ""


class JsonLines:
    """The JSON lines a process appends to a file, read as they come from byte `offset` on; a torn
    last line waits. What is not JSON is kept in `raw`."""

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path = path
        self.offset: int = offset
        self.pending: bytes = b""
        self.raw: list[str] = []

    def read(self) -> list[dict[str, Any]]:
        try:
            with open_read(self.path) as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        *lines, self.pending = (self.pending + data).split(b"\n")
        events = []
        for line in lines:
            text = line.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                event = json.loads(text)
            except ValueError:
                self.raw.append(text)
                continue
            if isinstance(event, dict):
                events.append(event)
        return events

    def rest(self) -> list[dict[str, Any]]:
        self.pending += b"\n"
        return self.read()


async def run_delivery(
    session: Session,
    message: Message,
    command: Sequence[str],
    prompt: str,
    *,
    env: Mapping[str, str] | None = None,
    watch: Callable[[dict[str, Any] | None], str | None] | None = None,
) -> Ran:
    """Run `command` for one delivery, `prompt` on its stdin, until it exits or `watch` ends it.

    `watch` sees every event as it comes, and None at each poll; a text it returns ends the
    process, and becomes `ended_because`. Cancelled, the process group is ended before this
    re-raises.
    """
    n = message.delivery
    stdin = message.dir / f"{n}.prompt.txt"
    stdout, stderr = message.dir / f"{n}.stdout.jsonl", message.dir / f"{n}.stderr.txt"
    write_atomic(stdin, prompt)
    process = session.spawn(
        command, env=env or message.env, stdin=stdin, stdout=stdout, stderr=stderr, turn=message.turn
    )
    lines = JsonLines(stdout)
    events: list[dict[str, Any]] = []
    ended_because = None
    try:
        while process.returncode is None and ended_because is None:
            await asyncio.sleep(POLL)
            for event in lines.read():
                events.append(event)
                ended_because = ended_because or (watch(event) if watch else None)
            if ended_because is None and watch is not None:
                ended_because = watch(None)
    finally:
        process.end()  # what it left in its group goes with it; when cancelled, it goes now
    events += lines.rest()
    return Ran(None if ended_because else process.returncode, events, stderr, ended_because, lines.raw)


def failure(name: str, program: str, ran: Ran, tested: str, unknown_option: Callable[[str], bool]) -> str:
    """Why the CLI ended with nothing to show: its exit and stderr, and the version it needs if
    it did not know an option awf gave it."""
    code = ran.code
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    tail = ran.stderr_tail() or "\n".join(ran.raw[-5:])
    said = f"; the end of its stderr:\n{tail}" if tail else " and printed nothing on stderr"
    if unknown_option(tail) or unknown_option(ran.stderr_head()):
        version = version_of(program) or "of an unknown version"
        return (
            f"{program} ({name} {version}) does not know an option awf gives it: update it to {tested} "
            f"or newer, the version awf is tested with{said}"
        )
    return f"{program} {how}{said}"
