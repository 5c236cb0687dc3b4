"""`awf answer`'s side of the channel: find the turn the environment names, check, settle it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..record.errors import RecordError
from ..record.file_kinds import AgentFile
from . import channel
from .answers import read_answer


class Refused(Exception):
    """There is no turn this answer may settle: no channel in the environment, not this agent's
    turn, or a turn settled already. Nothing was written."""


class Rejected(Exception):
    """The answer cannot be taken as it is: every problem, so the agent can fix them and retry."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Taken:
    run: str
    agent: str
    turn: int
    outcome: str


def answer(env: Mapping[str, str], text: str | None, *, blocked: str | None = None, turn: int | None = None) -> Taken:
    """Settle the agent's turn with `text` (or as blocked). Raises Refused or Rejected."""
    agent_dir, agent, name = _answering_agent(env)
    number = turn if turn is not None else _pinned(env) or agent["turn"]
    if number < 1 or number > agent["turn"]:
        raise Refused(f"{name} has no turn {number}; its current turn is {agent['turn'] or 'none yet'}")
    folder = channel.turn_dir(agent_dir, number)
    try:
        schema = channel.read_turn(folder)["schema"]
        settled = channel.read_outcome(folder)
    except (FileNotFoundError, RecordError) as error:
        raise Refused(f"turn {number} of {name} cannot be read: {error}") from None
    if settled is not None:
        raise Refused(_settled_text(name, number, settled))
    outcome = _settle(folder, text, blocked, schema)
    if outcome is None:  # awf settled it (a deadline, say) between the check and now
        now = channel.read_outcome(folder) or {"outcome": "settled", "by": "awf"}
        raise Refused(_settled_text(name, number, now))
    return Taken(agent["run"], agent["agent"], number, outcome["outcome"])


def _answering_agent(env: Mapping[str, str]) -> tuple[Path, AgentFile, str]:
    """The folder and record of the agent whose environment this is, and its name in messages;
    Refused when there is none, the token is not its own, or its attempt takes no answer now."""
    agent_dir, token = env.get(channel.ENV_DIR), env.get(channel.ENV_TOKEN)
    if not agent_dir or not token:
        raise Refused(
            f"there is no turn to answer here: {channel.ENV_DIR} and {channel.ENV_TOKEN} are not set. "
            "awf answer is run by an agent awf started, in the environment awf gave it"
        )
    try:
        agent = channel.read_agent(Path(agent_dir))
    except FileNotFoundError:
        raise Refused(f"{agent_dir} is not an agent's folder: there is no turn to answer there") from None
    except RecordError as error:
        raise Refused(f"the agent's record cannot be read: {error}") from None
    name = f"agent {agent['agent']} of run {agent['run']} (attempt {agent['attempt']})"
    if not channel.token_fits(agent, token):
        raise Refused(
            f"{agent_dir} is the folder of {name}, and {channel.ENV_TOKEN} is not its token: an agent answers "
            "only its own turns"
        )
    over = _attempt_over(Path(agent_dir), agent["attempt"])
    if over:
        raise Refused(f"{over}: the turns of {name} take no answer now; this one was not taken")
    return Path(agent_dir), agent, name


def _settle(folder: Path, text: str | None, blocked: str | None, schema: Any) -> channel.Settled | None:
    """The turn settled with the answer (or as blocked); None when it had settled already."""
    if blocked is not None:
        if not blocked.strip():
            raise Rejected(["--blocked needs a reason: say what you are waiting for"])
        return channel.settle_once(folder, "blocked", reason=blocked.strip(), by="awf answer --blocked")
    value, problems = read_answer(text or "", schema)
    if problems:
        raise Rejected(problems)
    return channel.settle_once(folder, "answered", value=value, by="awf answer")


def _attempt_over(agent_dir: Path, attempt: int) -> str | None:
    """Why the agent's attempt can take no answer: it ended, or a newer attempt took the run over
    after it was interrupted. The agent's folder is {run}/agents/{attempt}/{key}."""
    from ..record.log import read_lines

    log = agent_dir.parent.parent.parent / "run.jsonl"
    newer = None
    try:
        for line in read_lines(log, kinds=frozenset({"attempt-start", "attempt-end"})):
            entry = line.entry
            if entry["kind"] == "attempt-end" and entry.get("attempt") == attempt:
                return f"attempt {attempt} is over: it ended {entry.get('outcome')}"
            if entry["kind"] == "attempt-start" and entry.get("attempt", 0) > attempt:
                newer = entry["attempt"]
    except FileNotFoundError:
        return None
    except RecordError as error:
        raise Refused(f"the run's record cannot be read: {error}") from None
    if newer is not None:
        return f"attempt {attempt} was interrupted, and attempt {newer} has taken the run over"
    return None


def _pinned(env: Mapping[str, str]) -> int | None:
    try:
        return int(env.get(channel.ENV_TURN, ""))
    except ValueError:
        return None


def _settled_text(name: str, number: int, settled: channel.Settled) -> str:
    how = settled["outcome"]
    why = f" ({settled['reason']})" if settled.get("reason") else ""
    return f"turn {number} of {name} has settled already: {how}{why}. A turn takes one answer; this one was not taken"
