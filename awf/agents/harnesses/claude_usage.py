"""Claude Code's session file, read for what its model calls used.

Claude Code keeps each session in `projects/<its folder, every character but a letter or digit
made ->/<session id>.jsonl` under its config folder ($CLAUDE_CONFIG_DIR, else ~/.claude), one
JSON object a line. Each model call's reply is written as `assistant` lines, one for each block
of the reply (its text, each tool call), every one carrying the message's id and its `usage`; a
call is counted once, by that id, with the last usage written for it. The file says no cost:
awf prices the tokens with genai-prices, by the model each reply names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...record.files import is_file
from ..usage import SessionUsage, read_lines, whole

PROVIDER = "anthropic"
_NOT_NAME = re.compile(r"[^A-Za-z0-9]")
# Claude Code writes this model on a reply it made up itself (an error shown as a message): no call.
SYNTHETIC = "<synthetic>"


def config_dir(env: Mapping[str, str]) -> Path:
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser()
    return Path(env.get("HOME") or Path.home()).expanduser() / ".claude"


def session_file(env: Mapping[str, str], cwd: Path, session_id: str) -> Path:
    """Where the session `session_id`, started in `cwd`, is kept: found by its id when it is
    already there (a long folder name is shortened), else where Claude Code will write it."""
    projects = config_dir(env) / "projects"
    expected = projects / _NOT_NAME.sub("-", str(cwd)) / f"{session_id}.jsonl"
    if not is_file(expected):
        found = sorted(projects.glob(f"*/{session_id}.jsonl"))
        if found:
            return found[0]
    return expected


def read_usage(path: Path, start: int = 0, end: int | None = None) -> SessionUsage:
    """The calls whose replies were written between bytes `start` and `end` of the session file."""
    replies: dict[str, tuple[str, dict[str, Any]]] = {}
    for _, line in read_lines(path, start, end):
        message = line.get("message")
        if line.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage, model = message.get("usage"), message.get("model")
        if not isinstance(usage, dict) or not isinstance(model, str) or model == SYNTHETIC:
            continue
        key = message.get("id") if isinstance(message.get("id"), str) else line.get("uuid")
        replies[str(key)] = (model, usage)
    used = SessionUsage()
    for model, usage in replies.values():
        fresh, read, write = (
            whole(usage.get(key)) for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        )
        details = usage.get("output_tokens_details")
        thinking = whole(details.get("thinking_tokens")) if isinstance(details, dict) else 0
        used.add(
            model,
            {
                "input": fresh + read + write,
                "cached": read,
                "cache_write": write,
                "output": whole(usage.get("output_tokens")),
                "reasoning": thinking,
            },
        )
    return used


def finished(path: Path, start: int) -> bool:
    """Whether the session's last reply after byte `start` ended the model's turn (it asked for no
    tool, and nothing was sent to the model after it)."""
    ended = False
    for _, line in read_lines(path, start, None):
        kind = line.get("type")
        message = line.get("message")
        if kind == "assistant" and isinstance(message, dict) and message.get("model") != SYNTHETIC:
            ended = message.get("stop_reason") in ("end_turn", "stop_sequence", "max_tokens", "refusal")
        elif kind == "user":
            ended = False
    return ended
