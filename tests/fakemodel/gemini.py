"""The Gemini API (generateContent, streamGenerateContent): a reply as the JSON Gemini CLI reads.

A streamed reply is server-sent events (`?alt=sse`), each `data:` a GenerateContentResponse; the
last carries the finish reason and the usage. Gemini CLI's shell tool is `run_shell_command`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .replies import Shell, Text, Tool

SHELL_TOOL = "run_shell_command"
STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def error_body(code: int, message: str) -> dict[str, Any]:
    status = STATUSES.get(code, "INTERNAL")
    return {"error": {"code": code, "message": message or status.replace("_", " ").lower(), "status": status}}


def model_of(path: str) -> str:
    """The model a request's path names: /v1beta/models/{model}:{method}."""
    name = path.rsplit("/models/", 1)[-1]
    return name.split(":", 1)[0] or "gemini-fake"


def offered_tools(request: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for tool in request.get("tools") or []:
        for declaration in (tool or {}).get("functionDeclarations") or []:
            names.add(declaration.get("name"))
    return names


def is_conversation(request: dict[str, Any]) -> bool:
    """A turn of the agent's conversation (it offers tools), not a side request such as a routing
    or next-speaker check. Headless, Gemini CLI offers its shell tool only when a policy allows
    some command."""
    return bool(offered_tools(request))


def responses(reply: Text | Shell | Tool, request: dict[str, Any], model: str) -> Iterator[dict[str, Any]]:
    """The chunks of a streamed reply: the text in pieces, then any call with the finish and usage."""
    text = reply.text if isinstance(reply, Text) else reply.say
    pieces = [text[i : i + 40] for i in range(0, len(text), 40)] if text else []
    call: dict[str, Any] | None = None
    if isinstance(reply, Shell):
        call = {"name": SHELL_TOOL, "args": {"command": reply.command, "description": "Run a command"}}
    elif isinstance(reply, Tool):
        call = {"name": reply.name, "args": reply.input}
    for piece in pieces[:-1] if call is None else pieces:
        yield _response([{"text": piece}], model)
    last: list[dict[str, Any]] = [{"functionCall": call}] if call else [{"text": pieces[-1] if pieces else ""}]
    usage = reply.usage
    yield {
        **_response(last, model, finish="STOP"),
        "usageMetadata": {
            # Here the prompt count includes cached tokens, as in the OpenAI API.
            "promptTokenCount": usage.input + usage.cached,
            "cachedContentTokenCount": usage.cached,
            "candidatesTokenCount": usage.output,
            "totalTokenCount": usage.input + usage.cached + usage.output,
        },
    }


def whole(reply: Text | Shell | Tool, request: dict[str, Any], model: str) -> dict[str, Any]:
    """The reply unstreamed, as generateContent answers: one response with every part."""
    parts: list[dict[str, Any]] = []
    usage: dict[str, Any] = {}
    for chunk in responses(reply, request, model):
        parts += chunk["candidates"][0]["content"]["parts"]
        usage = chunk.get("usageMetadata", usage)
    joined = "".join(part.get("text", "") for part in parts if "text" in part)
    calls = [part for part in parts if "functionCall" in part]
    return {**_response(([{"text": joined}] if joined else []) + calls, model, finish="STOP"), "usageMetadata": usage}


def _response(parts: list[dict[str, Any]], model: str, finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": model, "responseId": "fake-response"}


def side_reply(request: dict[str, Any]) -> str:
    """The text of a side request's answer: a value of the JSON schema it asks for (its router's
    score, its next-speaker check), else a word."""
    config = request.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return json.dumps(_sample(schema)) if isinstance(schema, dict) else "OK"


def _sample(schema: dict[str, Any]) -> Any:
    """The plainest value of a schema: its first choice, or a small one of its type."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _sample(sub) for name, sub in properties.items() if isinstance(sub, dict)}
    if kind == "array":
        return []
    return {"string": "ok", "integer": 1, "number": 1, "boolean": False}.get(kind)
