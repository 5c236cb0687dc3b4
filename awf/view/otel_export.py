"""OpenTelemetry's providers for one attempt, and the bounded send of what it made.

Spans are kept as they end and metrics are read from memory; both are sent once, when the attempt
ends, on a thread the attempt waits for at most `BOUND` seconds. A collector that is down, slow or
refuses costs that much and one warning line, never the run's ending or its exit code. The SDK's own
log lines (retries, refusals) are kept from stderr: the warning says what went wrong, once.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from .. import __version__

BOUND = 2.0  # seconds an ending waits for the collector, at most


class RunIds(RandomIdGenerator):
    """Span ids at random; the run's trace id for a span with no parent, so every attempt of a run,
    wherever it runs, exports into the trace its `run` line names."""

    def __init__(self) -> None:
        self.trace_id: int | None = None

    def generate_trace_id(self) -> int:
        return self.trace_id if self.trace_id is not None else super().generate_trace_id()


class _Kept(SpanProcessor):
    """Keeps each span as it ends, for the one send at the attempt's end."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []
        self._lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.spans.append(span)

    def taken(self) -> list[ReadableSpan]:
        with self._lock:
            spans, self.spans = self.spans, []
        return spans


class _Said(logging.Handler):
    """The SDK's last complaint, for the one warning; nothing of it reaches stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.last = record.getMessage().splitlines()[0][:200] if record.getMessage() else None


class Export:
    """The tracer and meter of one attempt, and the send at its end."""

    def __init__(self, *, traces: bool, metrics_too: bool) -> None:
        self.said: _Said = _Said()
        sdk_log = logging.getLogger("opentelemetry")
        sdk_log.addHandler(self.said)
        sdk_log.propagate = False
        resource = Resource.create({"service.version": __version__})
        if str(resource.attributes.get(SERVICE_NAME, "unknown_service")).startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME: "awf"}))  # no OTEL_SERVICE_NAME given
        self.ids: RunIds = RunIds()
        self.kept: _Kept = _Kept()
        self.traces = traces
        # Not at exit: the attempt sends what it has once, bounded, and an exit never waits on it.
        self.tracer_provider: TracerProvider = TracerProvider(
            resource=resource, id_generator=self.ids, shutdown_on_exit=False
        )
        self.tracer_provider.add_span_processor(self.kept)
        self.tracer: trace.Tracer = self.tracer_provider.get_tracer("awf", __version__)
        self.reader: InMemoryMetricReader | None = None
        if metrics_too:
            self.reader = InMemoryMetricReader()
            self.meter_provider: MeterProvider = MeterProvider(
                resource=resource, metric_readers=[self.reader], shutdown_on_exit=False
            )
            self.meter: metrics.Meter = self.meter_provider.get_meter("awf", __version__)
        else:
            self.meter = metrics.NoOpMeter("awf")

    def send(self) -> str | None:
        """Send the spans and metrics made so far, waiting at most BOUND seconds; what went wrong,
        or None when the collector took everything."""
        spans = self.kept.taken() if self.traces else []
        data = self.reader.get_metrics_data() if self.reader is not None else None
        if not spans and data is None:
            return None
        deadline = time.monotonic() + BOUND  # the check below and the sends, all within it
        refused = _refused(_endpoint("traces" if spans else "metrics"))
        if refused is not None:
            return refused  # a collector that is down: said at once, not after the exporter's retries
        timeout = max(0.1, min(_timeout(), deadline - time.monotonic()))

        def send_spans() -> str | None:
            taken = OTLPSpanExporter(timeout=timeout).export(spans) is SpanExportResult.SUCCESS
            return None if taken else f"spans not taken by {_endpoint('traces')}"

        def send_metrics() -> str | None:
            assert data is not None
            taken = OTLPMetricExporter(timeout=timeout).export(data) is MetricExportResult.SUCCESS
            return None if taken else f"metrics not taken by {_endpoint('metrics')}"

        sends = [send for send, wanted in ((send_spans, bool(spans)), (send_metrics, data is not None)) if wanted]
        problems, answered = _within_bound(sends, deadline)
        why = f" ({self.said.last})" if self.said.last else ""
        if not answered:
            return f"the collector at {_endpoint('traces')} did not answer within {BOUND:g} s{why}"
        return "; ".join(problems) + why if problems else None


def _within_bound(sends: list[Callable[[], str | None]], deadline: float) -> tuple[list[str], bool]:
    """Run each send side by side, each on a daemon thread, until `deadline` at most: what went
    wrong, and whether all of them finished. A collector that never answers is left behind when awf
    exits, never waited for past the bound."""
    problems: list[str] = []

    def guarded(send: Callable[[], str | None]) -> None:
        try:
            problem = send()
        except Exception as error:  # an exporter that breaks must not break the ending
            problem = f"{type(error).__name__}: {error}"
        if problem is not None:
            problems.append(problem)

    senders = [threading.Thread(target=guarded, args=(send,), name="awf-otlp", daemon=True) for send in sends]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(max(0.0, deadline - time.monotonic()))
    return problems, not any(sender.is_alive() for sender in senders)


def _refused(endpoint: str) -> str | None:
    """Why nothing can be sent to `endpoint` when nothing listens there; None when something does."""
    found = urlsplit(endpoint)
    port = found.port or (443 if found.scheme == "https" else 80)
    if getproxies().get(found.scheme) and not proxy_bypass(found.hostname or ""):
        return None  # reached through a proxy: only the send can tell
    try:
        with socket.create_connection((found.hostname or "localhost", port), timeout=BOUND / 2):
            return None
    except OSError as error:
        return f"nothing answers at {found.hostname}:{port} ({error.strerror or error})"


def _timeout() -> float:
    """Each request's own limit: within the bound, and never beyond what OTEL_EXPORTER_OTLP_TIMEOUT asks."""
    try:
        given = float(os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT", "")) / 1000
    except ValueError:
        given = BOUND
    return max(0.1, min(given, BOUND))


def _endpoint(signal: str) -> str:
    own = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "").strip()
    if own:
        return own
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return f"{base.rstrip('/')}/v1/{signal}"


def span_context(trace_id: str, span_id: str, sampled: bool = True) -> trace.SpanContext:
    """Another program's span, named by hex ids, as a parent or a link."""
    flags = trace.TraceFlags(trace.TraceFlags.SAMPLED if sampled else trace.TraceFlags.DEFAULT)
    return trace.SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=flags)


def traceparent(span: trace.Span) -> str:
    """The W3C TRACEPARENT that makes `span` the parent of another program's spans."""
    context = span.get_span_context()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


__all__ = ("BOUND", "Export", "span_context", "traceparent")
