"""The answer channel: files in the run's folder through which an agent answers its turn.

awf gives each agent a folder and a token. An agent answers by running `awf answer`, which
finds the folder and proves itself with the token through the environment awf gave it:

    {run}/agents/{attempt}/{key}/agent.json         whose agent, the token's hash, its current turn
    {run}/agents/{attempt}/{key}/turn-{n}/turn.json  the turn's schema and deadline
    {run}/agents/{attempt}/{key}/turn-{n}/outcome.json  how the turn settled: created once, whole

outcome.json is written to a temp file, fsynced and hard-linked into place, which fails when
the file exists. So a turn settles exactly once, whoever is first (the agent answering, or awf
ending the turn), and a reader sees a whole outcome or none.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

from ..record import file_kinds
from ..record.clock import iso, now_iso
from ..record.errors import RecordError
from ..record.files import FILE_MODE, ensure_dir, write_atomic, write_json
from ..record.folder import read_json_file
from ..record.schemas import JsonSchema
from ..record.untrusted import open_parent, untrusted

AGENT_FILE = "agent.json"
TURN_FILE = "turn.json"
OUTCOME_FILE = "outcome.json"

# What an agent's environment holds for `awf answer`.
ENV_DIR = "AWF_AGENT_DIR"
ENV_TOKEN = "AWF_AGENT_TOKEN"
ENV_TURN = "AWF_TURN"
ENV_COMMAND = "AWF_ANSWER_COMMAND"


def agents_dir(run_dir: Path) -> Path:
    """The folder of a run's agents' folders, `{run}/agents`. Each agent writes its own folder, so
    awf opens nothing below this one through a link (record/untrusted.py)."""
    folder = run_dir / "agents"
    untrusted(folder)
    return folder


def turn_dir(agent_dir: Path, number: int) -> Path:
    return agent_dir / f"turn-{number}"


def awf_command() -> list[str]:
    """The command that runs this same awf, whatever PATH the agent has: isolated (-I), so neither
    the folder it runs in nor the environment puts a module of someone else's in awf's place (an
    agent that writes `awf.py` where another agent answers from)."""
    return [sys.executable, "-I", "-m", "awf"]


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class AgentChannel:
    """awf's side of one agent's channel."""

    dir: Path
    token: str
    fields: file_kinds.AgentFile

    @classmethod
    def create(cls, agent_dir: Path, *, run: str, attempt: int, agent: str, harness: str) -> AgentChannel:
        for folder in (agent_dir.parent.parent, agent_dir.parent, agent_dir):
            ensure_dir(folder)  # one at a time: parents made on the way get the default mode
        token = secrets.token_hex(16)
        fields = file_kinds.agent_file(
            run=run, attempt=attempt, agent=agent, harness=harness, token_sha256=_token_hash(token), turn=0
        )
        channel = cls(agent_dir, token, fields)
        write_json(agent_dir / AGENT_FILE, fields)
        _write_shim(agent_dir.parent / ".bin")
        return channel

    def open_turn(self, number: int, schema: JsonSchema | None, deadline: float | None, label: str) -> Path:
        """Make the turn's folder and point the agent at it. Returns the folder."""
        folder = turn_dir(self.dir, number)
        _set_aside(folder)
        ensure_dir(folder)
        write_json(
            folder / TURN_FILE,
            file_kinds.turn_file(
                run=self.fields["run"],
                attempt=self.fields["attempt"],
                agent=self.fields["agent"],
                turn=number,
                schema=schema,
                opened=now_iso(),
                deadline=iso(deadline) if deadline else None,
                label=label,
            ),
        )
        self.fields["turn"] = number
        write_json(self.dir / AGENT_FILE, self.fields)
        return folder

    def env(self, number: int) -> dict[str, str]:
        """What the agent's environment needs for `awf answer` to find this turn."""
        return {
            ENV_DIR: str(self.dir),
            ENV_TOKEN: self.token,
            ENV_TURN: str(number),
            ENV_COMMAND: shlex.join([*awf_command(), "answer"]),
            "AWF_RUN": self.fields["run"],
            "AWF_ATTEMPT": str(self.fields["attempt"]),
            "AWF_AGENT": self.fields["agent"],
            # `awf` first on PATH is this awf, so the prompt can say `awf answer` and mean it.
            "PATH": os.pathsep.join([str(self.dir.parent / ".bin"), os.environ.get("PATH", os.defpath)]),
        }


def _set_aside(folder: Path) -> None:
    """Move away whatever is where a turn's folder is about to be made: awf makes each turn's folder
    as the turn opens, so anything there already (a folder with an answer in it, a link) is the
    agent's. It is kept, renamed, for a person to look at."""
    parent, name = open_parent(folder)
    try:
        try:
            os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        os.rename(name, f"{name}.found-{secrets.token_hex(3)}", src_dir_fd=parent, dst_dir_fd=parent)
    finally:
        os.close(parent)


def _write_shim(folder: Path) -> None:
    """A one-line `awf` that runs the interpreter awf runs on, and nothing else of its venv.

    `.bin` cannot be an agent's folder: a key starts with a letter or a digit."""
    ensure_dir(folder)
    shim = folder / "awf"
    write_atomic(shim, "#!/bin/sh\nexec " + shlex.join(awf_command()) + ' "$@"\n')
    shim.chmod(0o700)


class Settled(TypedDict):
    """How a turn settled: its outcome.json, or what awf makes of one it cannot take."""

    outcome: str  # answered, unanswered, blocked, timed-out, failed, cancelled
    by: str  # what settled it
    value: NotRequired[Any]
    reason: NotRequired[str | None]


def settle(folder: Path, outcome: str, *, value: Any = None, reason: str | None = None, by: str) -> Settled:
    """Settle the turn in `folder`, unless it has settled already. Returns how it stands."""
    settled = settle_once(folder, outcome, value=value, reason=reason, by=by) or read_outcome(folder)
    if settled is None:  # settled already, and its file gone since: nothing tells how
        return {"outcome": "failed", "reason": f"its {OUTCOME_FILE} is gone", "by": "awf"}
    return settled


def settle_once(folder: Path, outcome: str, *, value: Any = None, reason: str | None = None, by: str) -> Settled | None:
    """Settle the turn in `folder` with this outcome; None when it had settled already."""
    number = int(folder.name.removeprefix("turn-"))
    record = file_kinds.turn_outcome(turn=number, outcome=outcome, value=value, reason=reason, by=by, at=now_iso())
    text = json.dumps(record, ensure_ascii=False, allow_nan=False, indent=2) + "\n"
    return record if _create_once(folder / OUTCOME_FILE, text) else None


def _create_once(path: Path, text: str) -> bool:
    """Write `path` whole, only if it does not exist: temp file, fsync, link. False if it existed."""
    folder, name = open_parent(path)  # by name in the folder held open: never through a planted link
    try:
        tmp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE, dir_fd=folder)
        try:
            view = memoryview(text.encode())
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp, dir_fd=folder)
        os.fsync(folder)
    finally:
        os.close(folder)
    return True


def read_outcome(folder: Path) -> Settled | None:
    """How the turn in `folder` settled, or None while it is open.

    The agent writes this file (`awf answer`), and may write anything there: an outcome.json that
    cannot be read or does not fit its schema settles the turn failed, saying why; it fails only
    that turn, never the stage or the attempt around it."""
    path = folder / OUTCOME_FILE
    try:
        return cast(file_kinds.TurnOutcome, read_json_file(path, "turn-outcome"))  # its schema checked it
    except FileNotFoundError:
        return None
    except (RecordError, OSError) as error:
        return {"outcome": "failed", "reason": f"its answer file cannot be taken: {error}", "by": "awf"}


def read_turn(folder: Path) -> file_kinds.TurnFile:
    return cast(file_kinds.TurnFile, read_json_file(folder / TURN_FILE, "turn"))  # its schema checked it


def read_agent(agent_dir: Path) -> file_kinds.AgentFile:
    return cast(file_kinds.AgentFile, read_json_file(agent_dir / AGENT_FILE, "agent"))  # its schema checked it


def token_fits(agent: file_kinds.AgentFile, token: str) -> bool:
    return hmac.compare_digest(agent["token_sha256"], _token_hash(token))
