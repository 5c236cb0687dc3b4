"""pi's session file, read for what its model calls used and what pi said they cost.

pi keeps each session in one JSON-lines file, appended as it works, under its folder of sessions
($PI_CODING_AGENT_SESSION_DIR, else `sessions/--<cwd, / made ->--/` under $PI_CODING_AGENT_DIR,
else under ~/.pi/agent). Its first line is the header (`"type": "session"`, the session's `id`);
every message after it is a line of type `message`, written once. Each reply of the model is a
message of role `assistant` with its `model`, its `provider` and its `usage`: `input` (the prompt
tokens read neither from a cache nor into one), `cacheRead`, `cacheWrite`, `output`, and `cost`,
what pi priced the call at from its own table of models (`cost.total`, in US dollars). pi writes
nothing to the file before the model's first reply, so a session that never got one has no file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...record.files import open_read
from ..usage import SessionUsage, read_lines, whole


def agent_dir(env: Mapping[str, str]) -> Path:
    """pi's own folder: its settings, models, logins and sessions."""
    given = env.get("PI_CODING_AGENT_DIR")
    if given:
        return _expand(given, env)
    return _home(env) / ".pi" / "agent"


def sessions_dir(env: Mapping[str, str], cwd: Path) -> Path:
    """Where pi keeps the sessions started in `cwd`, as pi itself names the folder."""
    given = env.get("PI_CODING_AGENT_SESSION_DIR")
    if given:
        return _expand(given, env)
    name = "--" + str(cwd).lstrip("/").replace("/", "-").replace(":", "-") + "--"
    return agent_dir(env) / "sessions" / name


def session_id(path: Path) -> str | None:
    """The id in the file's header, or None while pi has not written it."""
    try:
        with open_read(path) as handle:
            first = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    if isinstance(first, dict) and first.get("type") == "session" and isinstance(first.get("id"), str):
        return str(first["id"])
    return None


def find_session(env: Mapping[str, str], cwd: Path, wanted: str) -> Path | None:
    """The file of the session whose header has the id `wanted`, among the sessions of `cwd`."""
    for path in sorted(sessions_dir(env, cwd).glob("*.jsonl")):
        if session_id(path) == wanted:
            return path
    return None


@dataclass
class PiUsage(SessionUsage):
    """Tokens by model, with what pi said each model's calls cost."""

    cost_by_model: dict[str, float] = field(default_factory=dict)

    def add_reply(self, model: str, usage: Mapping[str, Any]) -> None:
        fresh, read, write = (whole(usage.get(key)) for key in ("input", "cacheRead", "cacheWrite"))
        self.add(
            model,
            {"input": fresh + read + write, "cached": read, "cache_write": write, "output": whole(usage.get("output"))},
        )
        self.cost_by_model[model] = self.cost_by_model.get(model, 0.0) + cost_of(usage)

    @property
    def cost(self) -> float:
        return sum(self.cost_by_model.values())

    def as_record(self, provider: str = "") -> dict[str, Any]:
        """The fields of a `usage` line: the tokens, and the cost pi gave them, in all and by model."""
        models = {
            model: {**tokens, "cost": self.cost_by_model.get(model, 0.0)} for model, tokens in self.by_model.items()
        }
        return {"tokens": self.tokens, "cost": self.cost, "models": models, "calls": self.calls}


def replies(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model's replies among session lines (or `message_end` events, which carry the same message)."""
    found = []
    for line in lines:
        message = line.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant" and isinstance(message.get("usage"), dict):
            found.append(message)
    return found


def used_by(messages: list[dict[str, Any]]) -> PiUsage:
    """What these replies of the model used; a reply with no tokens (a call that failed) is no call."""
    used = PiUsage()
    for message in messages:
        usage = message["usage"]
        if not any(whole(usage.get(key)) for key in ("input", "cacheRead", "cacheWrite", "output")):
            continue
        model = message.get("model")
        used.add_reply(model if isinstance(model, str) else "", usage)
    return used


def read_usage(path: Path, start: int = 0, end: int | None = None) -> PiUsage:
    """The replies written between bytes `start` and `end` of the session file."""
    return used_by(replies([line for _, line in read_lines(path, start, end) if line.get("type") == "message"]))


def cost_of(usage: Mapping[str, Any]) -> float:
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    return float(total) if isinstance(total, (int, float)) and not isinstance(total, bool) and total > 0 else 0.0


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home()).expanduser()


def _expand(path: str, env: Mapping[str, str]) -> Path:
    if path == "~" or path.startswith("~/"):
        return _home(env) / path[2:]
    return Path(path)
