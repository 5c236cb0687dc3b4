"""A collector for the tests: OTLP/HTTP on loopback, the protobuf decoded with opentelemetry-proto.

`with Receiver() as receiver:` listens on 127.0.0.1 (`receiver.url` is the endpoint to give
OTEL_EXPORTER_OTLP_ENDPOINT); `receiver.spans` and `receiver.points` are what awf exported, as plain
values. `Receiver(status=400)` refuses every request, as a collector that will not take them does;
`Receiver(silent=True)` takes each connection and never answers.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    return None if which is None else getattr(value, which)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent: str  # "" for a root span
    start: int  # ns since the epoch
    end: int
    attributes: dict[str, Any]
    status: int  # 0 unset, 1 ok, 2 error
    message: str
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, str]]  # (trace id, span id)
    resource: dict[str, Any]


@dataclass
class Receiver:
    status: int = 200
    silent: bool = False
    spans: list[Span] = field(default_factory=list)
    points: list[tuple[str, dict[str, Any], float]] = field(default_factory=list)  # (metric, attributes, value)
    requests: list[str] = field(default_factory=list)  # the paths posted to
    _server: ThreadingHTTPServer | None = None
    _closing: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.requests.append(self.path)
                if receiver.silent:
                    receiver._closing.wait(60)
                    return
                if receiver.status != 200:
                    self.send_response(receiver.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path == "/v1/traces":
                    receiver._take_spans(body)
                    answer = ExportTraceServiceResponse().SerializeToString()
                else:
                    receiver._take_metrics(body)
                    answer = ExportMetricsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self, **more: str) -> dict[str, str]:
        """The variables that send an `awf run`'s traces and metrics here."""
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": self.url, "OTEL_SERVICE_NAME": "awf-tests", **more}

    def named(self, name: str) -> list[Span]:
        return sorted((span for span in self.spans if span.name == name), key=lambda span: span.start)

    def wait_for(self, name: str, count: int, timeout: float = 10) -> list[Span]:
        deadline = time.monotonic() + timeout
        while len(self.named(name)) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.named(name)

    def _take_spans(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        Span(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent=span.parent_span_id.hex(),
                            start=span.start_time_unix_nano,
                            end=span.end_time_unix_nano,
                            attributes=_attributes(span.attributes),
                            status=span.status.code,
                            message=span.status.message,
                            events=[(event.name, _attributes(event.attributes)) for event in span.events],
                            links=[(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                            resource=resource,
                        )
                    )

    def _take_metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        for resource_metrics in request.resource_metrics:
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    which = metric.WhichOneof("data")
                    for point in getattr(metric, which).data_points:
                        if which == "histogram":
                            value = float(point.sum)
                        else:
                            value = float(point.as_double if point.HasField("as_double") else point.as_int)
                        self.points.append((metric.name, _attributes(point.attributes), value))
