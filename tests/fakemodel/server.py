"""A fake model on 127.0.0.1: answers Claude Code and Codex from a script and records every request."""

from __future__ import annotations

import json
import select
import socket
import threading
from collections import deque
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from . import anthropic, gemini, openai
from .replies import Reply, Shell, Silence, Status, Text, Tool

NOTHING_SCRIPTED = "fake model: nothing was scripted for this request"


@dataclass
class Request:
    """One request as the server received it; `reply` is what the script answered (None when not scripted)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    api: str = "other"
    reply: Reply | None = None
    side: bool = False
    error: str | None = None

    def text(self) -> str:
        """The whole body as text, to look for earlier words of the conversation."""
        return json.dumps(self.body) if self.body is not None else ""


@dataclass
class FakeModel:
    """Start with `with FakeModel() as model:`; `model.url` is its base URL, `model.script(...)` what it says.

    Each conversation request (Anthropic /v1/messages offering the shell tool, OpenAI /v1/responses)
    takes the next scripted reply in order, whichever API it comes through. Side requests (a title,
    a token count, a model list, a hello) get a harmless answer and take nothing from the script.
    A conversation request with nothing scripted gets the text NOTHING_SCRIPTED and is listed in
    `unscripted`, so a test that scripted too little fails on its assertions rather than hanging.
    """

    requests: list[Request] = field(default_factory=list)
    _script: deque[Reply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def __enter__(self) -> FakeModel:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        model = self

        class Handler(_Handler):
            fake = model

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-model", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()  # lets silent handlers go
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        assert self._server is not None, "the fake model is not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> FakeModel:
        with self._lock:
            self._script.extend(replies)
        return self

    @property
    def left(self) -> list[Reply]:
        """Scripted replies no request has taken yet."""
        with self._lock:
            return list(self._script)

    @property
    def conversation(self) -> list[Request]:
        """The requests that took (or wanted) a scripted reply, in order."""
        with self._lock:
            return [r for r in self.requests if r.api != "other" and not r.side]

    @property
    def unscripted(self) -> list[Request]:
        return [r for r in self.conversation if r.reply is None]

    def _record(self, request: Request) -> Reply | None:
        with self._lock:
            self.requests.append(request)
            if request.api != "other" and not request.side and self._script:
                request.reply = reply = self._script.popleft()
                if isinstance(reply, Status) and reply.times != 1:
                    self._script.appendleft(replace(reply, times=None if reply.times is None else reply.times - 1))
            return request.reply


def _dialect(request: Request) -> Any:
    """The module that speaks the request's API."""
    return {"anthropic": anthropic, "gemini": gemini}.get(request.api, openai)


def unused_port() -> int:
    """A port nothing listens on (bound, then freed): where a model server that is down would be."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeModel

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the test's output is the CLI's
        pass

    def do_HEAD(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = urlsplit(self.path).path
        request = Request(self.command, self.path, dict(self.headers), body)
        if self.command == "POST" and path.endswith("/messages/count_tokens"):
            self.fake._record(request)
            return self._json(200, {"input_tokens": 100})
        if self.command == "POST" and path.endswith("/messages"):
            request.api = "anthropic"
            request.side = not anthropic.is_conversation(body if isinstance(body, dict) else {})
        elif self.command == "POST" and path.endswith("/responses"):
            request.api = "openai"
            request.side = not openai.is_conversation(body if isinstance(body, dict) else {})
        elif self.command == "POST" and path.endswith(":countTokens"):
            self.fake._record(request)
            return self._json(200, {"totalTokens": 100})
        elif self.command == "POST" and path.endswith((":generateContent", ":streamGenerateContent")):
            request.api = "gemini"
            request.side = not gemini.is_conversation(body if isinstance(body, dict) else {})
        reply = self.fake._record(request)
        if request.api == "other":
            return self._other(path)
        if request.side:
            side = gemini.side_reply(body) if request.api == "gemini" and isinstance(body, dict) else "OK"
            return self._stream(request, Text(side))
        return self._answer(request, reply if reply is not None else Text(NOTHING_SCRIPTED))

    def _other(self, path: str) -> None:
        if path.endswith("/models"):
            return self._json(200, {"object": "list", "data": [], "has_more": False})
        self._json(200, {})

    def _answer(self, request: Request, reply: Reply) -> None:
        if isinstance(reply, Status):
            return self._json(reply.code, _dialect(request).error_body(reply.code, reply.message))
        if isinstance(reply, Silence):
            if reply.started:
                self._stream_headers()
            return self._hang()
        self._stream(request, reply)

    def _stream(self, request: Request, reply: Text | Shell | Tool) -> None:
        body = request.body if isinstance(request.body, dict) else {}
        path = urlsplit(request.path).path
        try:
            if request.api == "anthropic":
                events: list[tuple[str | None, Any]] = list(anthropic.events(reply, body))
            elif request.api == "gemini":
                model = gemini.model_of(path)
                if path.endswith(":generateContent"):
                    return self._json(200, gemini.whole(reply, body, model))
                events = [(None, data) for data in gemini.responses(reply, body, model)]
            else:
                events = [(data["type"], data) for data in openai.events(reply, body)]
        except ValueError as error:  # a script the request cannot take: say so where the test will see it
            request.error = str(error)
            return self._json(400, _dialect(request).error_body(400, f"fake model: {error}"))
        self._stream_headers()
        try:
            for name, data in events:
                named = f"event: {name}\n" if name else ""
                self._chunk(f"{named}data: {json.dumps(data)}\n\n".encode())
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _stream_headers(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, code: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _hang(self) -> None:
        """Say nothing until the client hangs up or the server stops."""
        self.close_connection = True
        sock = self.connection
        while not self.fake._stopping.is_set():
            readable, _, _ = select.select([sock], [], [], 0.2)
            if readable:
                try:
                    if not sock.recv(1024, socket.MSG_PEEK):
                        return
                except OSError:
                    return
