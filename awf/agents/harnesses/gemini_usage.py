"""Gemini CLI's session file, read for what its model calls used.

Gemini CLI keeps each session in `tmp/<project>/chats/session-<time>-<first 8 of id>.jsonl` under
its folder ($GEMINI_CLI_HOME/.gemini, else ~/.gemini); the first line names the session
(`sessionId`). The file is appended: a message is a line with an `id` and a `type`, written again
whole (same id) when it changes, and a `$set` line rewrites fields (a resumed session sets its
whole history again). Each reply of the model is a message of type `gemini` with its `model` and
`tokens` (input counts the cached prompt too). A reply is counted once, at the first line that
gives its tokens; `$set` lines repeat history and are never counted. Gemini CLI says no cost: awf
prices the tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ...record.files import open_read
from ..usage import SessionUsage, whole

PROVIDER = "google"


def home(env: Mapping[str, str]) -> Path:
    """Where Gemini CLI keeps its settings and its sessions."""
    base = env.get("GEMINI_CLI_HOME") or env.get("HOME")
    return (Path(base).expanduser() if base else Path.home()) / ".gemini"


def session_file(env: Mapping[str, str], session_id: str) -> Path | None:
    """The file of session `session_id`, or None while Gemini CLI has not written it."""
    for path in sorted(home(env).glob(f"tmp/*/chats/session-*-{session_id[:8]}.jsonl")):
        try:
            with open_read(path) as handle:
                first = json.loads(handle.readline())
        except (OSError, ValueError):
            continue
        if isinstance(first, dict) and first.get("sessionId") == session_id:
            return path
    return None


def tokens_of(given: Mapping[str, Any]) -> dict[str, int]:
    """awf's token kinds from Gemini CLI's: its thinking is billed as output."""
    thoughts = whole(given.get("thoughts"))
    return {
        "input": whole(given.get("input")),
        "cached": whole(given.get("cached")),
        "output": whole(given.get("output")) + thoughts,
        "reasoning": thoughts,
    }


def read_usage(path: Path, start: int = 0, end: int | None = None) -> SessionUsage:
    """The replies whose tokens were first written between bytes `start` and `end` of the file."""
    counted: set[str] = set()
    used = SessionUsage()
    offset = 0
    for line, size in _lines_with_sizes(path, end):
        inside = offset >= start
        offset += size
        if line.get("type") != "gemini" or not isinstance(line.get("tokens"), dict):
            continue
        key = str(line.get("id"))
        if key in counted:
            continue
        counted.add(key)
        if inside:
            model = line.get("model")
            used.add(model if isinstance(model, str) else "", tokens_of(line["tokens"]))
    return used


def _lines_with_sizes(path: Path, end: int | None) -> Iterator[tuple[dict[str, Any], int]]:
    """Every whole line up to `end`, with its length in bytes: a reply counted before `start` is
    not counted again when it is written again after."""
    with open_read(path) as handle:
        data = handle.read() if end is None else handle.read(end)
    for raw in data.splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            return
        try:
            item = json.loads(raw)
        except ValueError:
            item = None
        yield (item if isinstance(item, dict) else {}), len(raw)
