"""The Anthropic Messages API, streamed: a reply as the server-sent events Claude Code and pi read."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from .replies import Shell, Text, Tool

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


# The shell tool of each CLI that speaks this API: Claude Code's, pi's.
SHELL_TOOLS = {"Bash", "bash"}


def error_body(code: int, message: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(code, "api_error")
    return {
        "type": "error",
        "error": {"type": kind, "message": message or kind.replace("_", " ")},
        "request_id": f"req_{uuid.uuid4().hex[:24]}",
    }


def events(reply: Text | Shell | Tool, request: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, data) pairs: message_start, one content block per piece, message_delta, message_stop."""
    usage = reply.usage
    start_usage = {
        "input_tokens": usage.input,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cached,
        "output_tokens": 1,
    }
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "role": "assistant",
                "model": request.get("model", "claude-fake"),
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        },
    )
    index = 0
    text = reply.text if isinstance(reply, Text) else reply.say
    if text:
        yield from _text_block(index, text)
        index += 1
    if isinstance(reply, Shell):
        yield from _tool_block(index, *_shell_call(request, reply.command))
    elif isinstance(reply, Tool):
        yield from _tool_block(index, reply.name, reply.input)
    stop = "end_turn" if isinstance(reply, Text) else "tool_use"
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {**start_usage, "output_tokens": usage.output},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _shell_call(request: dict[str, Any], command: str) -> tuple[str, dict[str, Any]]:
    """The call of the shell tool the request offers: Claude Code's `Bash` (which takes a
    description too), or pi's `bash`."""
    if "bash" in _tool_names(request):
        return "bash", {"command": command}
    return "Bash", {"command": command, "description": "Run a command"}


def _tool_names(request: dict[str, Any]) -> set[str]:
    return {str(tool.get("name")) for tool in request.get("tools") or [] if isinstance(tool, dict)}


def _text_block(index: int, text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
    )
    for piece in _pieces(text):
        yield (
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}},
        )
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _tool_block(index: int, name: str, arguments: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": name, "input": {}},
        },
    )
    for piece in _pieces(json.dumps(arguments)):
        yield (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            },
        )
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _pieces(text: str, size: int = 40) -> list[str]:
    """Split as a real stream would, so clients are exercised on joining deltas."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def is_conversation(request: dict[str, Any]) -> bool:
    """A turn of the agent's conversation (it offers the shell tool), not a side request such as a title."""
    return bool(_tool_names(request) & SHELL_TOOLS)
