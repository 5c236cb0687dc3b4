"""The OpenAI Responses API, streamed: a reply as the server-sent events Codex reads."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from .replies import Shell, Text, Tool

ERROR_CODES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "model_not_found",
    429: "rate_limit_exceeded",
    500: "server_error",
}


def error_body(code: int, message: str) -> dict[str, Any]:
    kind = ERROR_CODES.get(code, "server_error")
    return {"error": {"message": message or kind.replace("_", " "), "type": kind, "param": None, "code": kind}}


def shell_call(command: str, request: dict[str, Any]) -> dict[str, Any]:
    """The output item that calls this Codex's shell tool with `command`.

    Codex has shipped several shell tools and picks them per model; the request's tool list says
    which one it expects, so the server follows that rather than a version number. Models in
    "code mode" get one `exec` tool taking JavaScript, which reaches the shell as
    `tools.exec_command`; other models get `exec_command` (or older `shell_command`, `shell`).
    """
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    top = {tool.get("name") for tool in request.get("tools") or []}
    if "exec_command" in top:
        return _function(call_id, "exec_command", {"cmd": command})
    if "shell_command" in top:
        return _function(call_id, "shell_command", {"command": command})
    if "shell" in top:
        return _function(call_id, "shell", {"command": ["bash", "-lc", command]})
    if "exec" in _code_mode_tools(request):
        script = f"const result = await tools.exec_command({json.dumps({'cmd': command})});\ntext(result);\n"
        return {
            "id": f"ctc_{uuid.uuid4().hex[:24]}",
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": call_id,
            "name": "exec",
            "input": script,
        }
    raise ValueError(f"the request offers no shell tool (tools: {sorted(n for n in top if n)})")


def _function(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"fc_{uuid.uuid4().hex[:24]}",
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments),
    }


def _code_mode_tools(request: dict[str, Any]) -> set[str]:
    """Names of the tools a code-mode request lists in its `additional_tools` input item."""
    names: set[str] = set()
    for item in request.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            for group in item.get("tools") or []:
                names.update(tool.get("name") for tool in group.get("tools") or [])
    return names


def events(reply: Text | Shell | Tool, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The data of each event: response.created, each output item added and done, response.completed."""
    response = {
        "id": f"resp_{uuid.uuid4().hex[:24]}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": request.get("model", "gpt-fake"),
        "output": [],
    }
    sequence = iter(range(1_000_000))
    yield {"type": "response.created", "sequence_number": next(sequence), "response": response}
    items = []
    text = reply.text if isinstance(reply, Text) else reply.say
    if text:
        items.append(
            {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    if isinstance(reply, Shell):
        items.append(shell_call(reply.command, request))
    elif isinstance(reply, Tool):
        items.append(_function(f"call_{uuid.uuid4().hex[:24]}", reply.name, reply.input))
    for index, item in enumerate(items):
        for event in _item_events(index, item):
            yield {**event, "sequence_number": next(sequence)}
    usage = reply.usage
    yield {
        "type": "response.completed",
        "sequence_number": next(sequence),
        "response": {
            **response,
            "status": "completed",
            "output": items,
            "usage": {
                # Here input counts cached tokens too (the Anthropic API counts them apart).
                "input_tokens": usage.input + usage.cached,
                "input_tokens_details": {"cached_tokens": usage.cached},
                "output_tokens": usage.output,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.input + usage.cached + usage.output,
            },
        },
    }


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    where = {"output_index": index, "item_id": item["id"]}
    if item["type"] == "message":
        text = item["content"][0]["text"]
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "status": "in_progress", "content": []},
        }
        part = {"type": "output_text", "text": "", "annotations": []}
        yield {"type": "response.content_part.added", **where, "content_index": 0, "part": part}
        yield {"type": "response.output_text.delta", **where, "content_index": 0, "delta": text}
        yield {"type": "response.output_text.done", **where, "content_index": 0, "text": text}
        yield {"type": "response.content_part.done", **where, "content_index": 0, "part": {**part, "text": text}}
    elif item["type"] == "function_call":
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "status": "in_progress", "arguments": ""},
        }
        yield {"type": "response.function_call_arguments.delta", **where, "delta": item["arguments"]}
        yield {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]}
    else:
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "status": "in_progress", "input": ""},
        }
        yield {"type": "response.custom_tool_call_input.delta", **where, "delta": item["input"]}
        yield {"type": "response.custom_tool_call_input.done", **where, "input": item["input"]}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def is_conversation(request: dict[str, Any]) -> bool:
    """A turn of the agent's conversation, not the title Codex's terminal UI asks for a new thread
    (beside the turn's first request, in no fixed order)."""
    return "thread_title" not in json.dumps(request.get("client_metadata") or {})
