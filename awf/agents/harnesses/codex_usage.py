"""Codex's session file (its rollout), read for what its model calls used.

Codex keeps each thread in `sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl` under its home
($CODEX_HOME, else ~/.codex), one JSON object a line, each with a `type` and a `payload`. Each
model call writes a `token_usage_record` with that call's `usage` as soon as its reply is in;
`event_msg` lines of type `token_count` carry the thread's running total (`total_token_usage`),
written later, once the call's tools have run. A file with usage records is summed call by call;
one from a codex that writes none, by the difference of the running totals. The model is the
one the thread's `turn_context` lines name. Codex says no cost: awf prices the tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..usage import SessionUsage, read_lines, whole

PROVIDER = "openai"
UNKNOWN_MODEL = ""


def home(env: Mapping[str, str]) -> Path:
    """Where codex keeps its config and its session files."""
    if env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"]).expanduser()
    return Path(env.get("HOME") or Path.home()).expanduser() / ".codex"


def session_file(env: Mapping[str, str], thread: str) -> Path | None:
    """The rollout of thread `thread`, or None while codex has not written it."""
    found = sorted(home(env).glob(f"sessions/*/*/*/rollout-*-{thread}.jsonl"))
    return found[-1] if found else None


def _tokens(usage: dict[str, Any]) -> dict[str, int]:
    return {
        "input": whole(usage.get("input_tokens")),
        "cached": whole(usage.get("cached_input_tokens")),
        "cache_write": whole(usage.get("cache_write_input_tokens")),
        "output": whole(usage.get("output_tokens")),
        "reasoning": whole(usage.get("reasoning_output_tokens")),
    }


def read_usage(path: Path, start: int = 0, end: int | None = None) -> SessionUsage:
    """The calls whose usage was written between bytes `start` and `end` of the rollout."""
    model = UNKNOWN_MODEL
    records: list[tuple[str, dict[str, int]]] = []
    total_before: dict[str, int] | None = None
    total_last: dict[str, int] | None = None
    totals_seen = 0
    # From the file's first line: the model in force at `start`, and the total before it, are before it.
    for offset, line in read_lines(path, 0, end):
        inside = offset >= start
        payload = line.get("payload")
        if not isinstance(payload, dict):
            continue
        kind = line.get("type")
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
        elif kind == "token_usage_record" and isinstance(payload.get("usage"), dict) and inside:
            records.append((model, _tokens(payload["usage"])))
        elif kind == "event_msg" and payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
            total = payload["info"].get("total_token_usage")
            if isinstance(total, dict):
                if inside:
                    total_last, totals_seen = _tokens(total), totals_seen + 1
                else:
                    total_before = _tokens(total)
    used = SessionUsage()
    if records:
        for name, tokens in records:
            used.add(name, tokens)
    elif total_last is not None:
        before = total_before or {}
        used.add(model, {kind: max(count - before.get(kind, 0), 0) for kind, count in total_last.items()})
        used.calls = totals_seen
    return used
