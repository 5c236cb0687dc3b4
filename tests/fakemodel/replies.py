"""What the fake model says to one request: the script a test hands to the server."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Usage:
    """Tokens the reply reports: `input` counts the uncached prompt, `cached` the prompt read from cache."""

    input: int = 120
    cached: int = 0
    output: int = 12


@dataclass(frozen=True)
class Text:
    """The model answers in words and ends its turn."""

    text: str
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class Shell:
    """The model calls the CLI's shell tool with `command`; the CLI runs it and asks the model again.

    `say` is text the model writes before the call (none when empty).
    """

    command: str
    say: str = ""
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class Tool:
    """The model calls the tool `name` with `input` (e.g. Claude Code's StructuredOutput under --json-schema)."""

    name: str
    input: dict[str, Any]
    say: str = ""
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class Status:
    """The server refuses with an HTTP status and an error body in the API's own shape.

    It answers this way to `times` requests in a row (every request from then on when None): the
    CLIs retry such errors on their own, so one refusal is usually not the end of a turn.
    """

    code: int
    message: str = ""
    times: int | None = 1


@dataclass(frozen=True)
class Silence:
    """The server accepts the request and never answers, until the client hangs up or the server stops.

    With `started`, it first sends the headers of a stream (200, text/event-stream), then nothing.
    """

    started: bool = False


Reply = Text | Shell | Tool | Status | Silence
