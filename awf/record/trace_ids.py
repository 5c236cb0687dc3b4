"""A run's trace: the OpenTelemetry trace id every attempt of the run exports its spans under.

The id is fixed when the run is made and kept on its `run` line, so every attempt, wake and placed
attempt of one run lands in one trace wherever it runs. It is derived from the run's identity
(workflow, id and the time it was made) unless `TRACEPARENT` names the caller's trace (a CI job's):
then the run joins that trace and keeps the caller's span as the parent of its first attempt.
Standard library only: a run that exports nothing still records its trace.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

# W3C Trace Context, version 00: version-trace_id-parent_id-flags, lower-case hex.
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


@dataclass(frozen=True)
class Parent:
    """A span of another program, as a `TRACEPARENT` names it."""

    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    sampled: bool

    @property
    def header(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"


def parse_traceparent(text: str | None) -> Parent | None:
    """The span `text` names, or None for a header that is missing or not W3C Trace Context (the
    all-zero ids are invalid by that standard)."""
    found = _TRACEPARENT.match((text or "").strip().lower())
    if found is None or found.group(1) == "ff":
        return None
    trace_id, span_id = found.group(2), found.group(3)
    if set(trace_id) == {"0"} or set(span_id) == {"0"}:
        return None
    return Parent(trace_id, span_id, bool(int(found.group(4), 16) & 1))


def derived_trace_id(workflow: str, run_id: str, made: str) -> str:
    """The trace id of run `workflow/run_id` made at `made` (ISO 8601): a run made again under an
    id that was removed gets a trace of its own."""
    digest = hashlib.sha256(f"awf-run\0{workflow}\0{run_id}\0{made}".encode()).hexdigest()[:32]
    return digest if set(digest) != {"0"} else "1" + digest[1:]


def new_run_trace(workflow: str, run_id: str, made: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The `trace_id` (and `trace_parent`) fields of a new run's `run` line."""
    parent = parse_traceparent(environ.get("TRACEPARENT"))
    if parent is None:
        return {"trace_id": derived_trace_id(workflow, run_id, made)}
    return {"trace_id": parent.trace_id, "trace_parent": parent.header}
