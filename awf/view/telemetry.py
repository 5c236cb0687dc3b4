"""Whether an attempt exports traces and metrics, read off the standard OTEL_* variables, and the
observer that does it when they ask.

Off unless the variables ask: an endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, or the one of traces or
of metrics) or an exporter (`OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER`) set to `otlp`. Nothing
of OpenTelemetry is imported here: an attempt that does not ask starts as fast as before. When the
variables ask and awf's `otel` extra is not installed, one `awf:` line says so and the run goes on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
_SIGNALS = {"traces": "OTEL_TRACES_EXPORTER", "metrics": "OTEL_METRICS_EXPORTER"}
_OWN_ENDPOINTS = {"traces": "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "metrics": "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"}


@dataclass(frozen=True)
class Asked:
    """What the environment asks to be exported, and what it asks that awf does not do."""

    traces: bool
    metrics: bool
    unsupported: tuple[str, ...] = ()  # one sentence each, said as a warning

    @property
    def anything(self) -> bool:
        return self.traces or self.metrics


def asked(environ: Mapping[str, str]) -> Asked:
    """Read the OTEL_* variables as the OpenTelemetry SDKs do, for the two signals awf exports."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return Asked(False, False)
    wanted: dict[str, bool] = {}
    unsupported: list[str] = []
    for signal, variable in _SIGNALS.items():
        exporter = environ.get(variable, "").strip().lower()
        endpoint = bool(environ.get(_OWN_ENDPOINTS[signal], "").strip() or environ.get(_ENDPOINT, "").strip())
        if exporter in ("", "otlp"):
            wanted[signal] = exporter == "otlp" or endpoint
        else:
            wanted[signal] = False
            if exporter != "none":
                unsupported.append(f"{variable}={exporter}: awf exports {signal} over OTLP only (otlp or none)")
    protocol = environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip().lower()
    if protocol not in ("", "http/protobuf") and (wanted["traces"] or wanted["metrics"]):
        unsupported.append(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: awf sends OTLP over HTTP (http/protobuf)")
    return Asked(wanted["traces"], wanted["metrics"], tuple(unsupported))


def warn(text: str) -> None:
    """One `awf:` line on stderr: telemetry never fails a run, it only says what it could not do."""
    try:
        print(f"awf: {text}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _nothing() -> None:
    pass


def observed(view: Any, environ: Mapping[str, str]) -> tuple[Any, Callable[[], None]]:
    """The observer an attempt reports to, and what to call once it has ended, whatever ended it:
    `view` itself and nothing to call when no OTEL_* variable asks for telemetry."""
    wants = asked(environ)
    for sentence in wants.unsupported:
        warn(sentence)
    if not wants.anything:
        return view, _nothing
    try:
        import opentelemetry.exporter.otlp.proto.http  # the extra's last package, present or not
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        warn(
            "the OTEL_* variables ask for traces or metrics, but awf's otel extra is not installed: "
            "pip install 'awf[otel]'; this run exports nothing"
        )
        return view, _nothing
    from .traces import Traced

    traced = Traced(view, traces=wants.traces, metrics=wants.metrics)

    def finish() -> None:
        try:
            problem = traced.finish()
        except KeyboardInterrupt:  # Ctrl-C again while the spans go: the attempt has ended already
            problem = "traces and metrics not sent: interrupted while sending"
        if problem is not None:
            warn(f"{problem}; the run is not affected")

    return traced, finish
