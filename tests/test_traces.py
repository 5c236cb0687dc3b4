"""Traces and metrics of runs: the real `awf run` exporting to a real OTLP/HTTP receiver on loopback
(tests/otlp_receiver.py), and starting as before when no OTEL_* variable asks."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import pytest
from conftest import Project, finish, send
from otlp_receiver import Receiver, Span

WORKFLOW = """
import asyncio
import os
import sys

import awf


@awf.workflow(name="traced", description="A stage, an agent's turn, and a stage that may stop or wait.")
async def traced(wf):
    async def plan():
        agent = await wf.agents.open(
            key="planner",
            runtime={"harness": "exec", "command": [sys.executable, "-c", AGENT]},
        )
        turn = await agent.run(prompt="Plan it.", schema={"type": "object"})
        if not turn.outcome.answered:
            wf.stop(f"no plan: {turn.outcome.reason}")
        return turn.outcome.value

    await wf.stage("plan", plan, result={"type": "object"})

    async def build():
        if os.environ.get("STOP_IN_BUILD"):
            wf.stop("asked to stop in build")
        if os.environ.get("WAIT_IN_BUILD"):
            open(os.environ["WAIT_IN_BUILD"], "w").close()
            await asyncio.sleep(600)
        return {"built": True}

    return await wf.stage("build", build, result={"type": "object"})


# The agent answers through the channel, and leaves the TRACEPARENT it was given beside the project.
AGENT = '''
import os, subprocess
with open("traceparent.txt", "w") as out:
    out.write(os.environ.get("TRACEPARENT", ""))
subprocess.run(["awf", "answer", '{"steps": 1}'], check=True)
'''
"""

CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
# What awf exports needs the otel extra; what it says without the extra, and the trace ids it
# records, need nothing of it.
needs_otel = pytest.mark.skipif(
    find_spec("opentelemetry.sdk") is None, reason="the otel extra is not installed: pip install -e '.[test,otel]'"
)


def awf_run(
    project: Project, receiver_env: dict[str, str], *flags: str, **env: str
) -> subprocess.CompletedProcess[str]:
    workflow = project.path / "traced.py"
    if not workflow.exists():
        project.write("traced.py", WORKFLOW)
    return subprocess.run(
        ["awf", "run", str(workflow), *flags],
        cwd=project.path,
        env={**project.env, **receiver_env, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_line(project: Project, run_id: str) -> dict[str, object]:
    return project.log("traced", run_id)[0]


def awf_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("awf: ")]


@needs_otel
def test_a_stop_and_a_continue_are_one_trace_of_two_attempts_with_their_stages_in_order(project: Project) -> None:
    with Receiver() as receiver:
        stopped = awf_run(project, receiver.env(), "--id", "t1", STOP_IN_BUILD="1")
        assert stopped.returncode == 3, stopped.stderr
        went_on = awf_run(project, receiver.env(), "--id", "t1", "--continue")
        assert went_on.returncode == 0, went_on.stderr
        assert not awf_lines(stopped.stderr + went_on.stderr)

    first, second = receiver.named("awf.attempt")
    trace_id = run_line(project, "t1")["trace_id"]
    assert {span.trace_id for span in receiver.spans} == {trace_id}
    assert first.parent == second.parent == ""  # no TRACEPARENT: each attempt is a root of the run's trace
    assert first.attributes["awf.attempt"] == 1 and second.attributes["awf.attempt"] == 2
    assert first.attributes["awf.workflow"] == "traced" and first.attributes["awf.run.id"] == "t1"
    assert first.attributes["awf.attempt.ending"] == "stopped" and first.attributes["awf.attempt.exit_code"] == 3
    assert (
        first.attributes["awf.attempt.start_point"] == "plan" and first.attributes["host.name"] == socket.gethostname()
    )
    assert (first.status, first.message) == (2, "stopped: asked to stop in build")
    assert second.attributes["awf.attempt.ending"] == "completed" and second.status == 1
    assert second.attributes["awf.attempt.start_point"] == "build"
    assert first.resource["service.name"] == "awf-tests"

    def stages(attempt: str) -> list[tuple[str, bool, int]]:
        return [
            (span.attributes["awf.stage.name"], span.attributes["awf.stage.reused"], span.status)
            for span in receiver.named("awf.stage")
            if span.parent == attempt
        ]

    assert stages(first.span_id) == [("plan", False, 0), ("build", False, 2)]
    assert stages(second.span_id) == [("plan", True, 0), ("build", False, 0)]
    [reused] = [span for span in receiver.named("awf.stage") if span.attributes["awf.stage.reused"]]
    assert reused.end - reused.start < 5_000_000 and reused.attributes["awf.stage.recorded_by"] == 1

    # The agent's turn: a span under its stage, and the TRACEPARENT its process was given is that span.
    [turn] = receiver.named("invoke_agent planner")
    [plan] = [
        span
        for span in receiver.named("awf.stage")
        if span.parent == first.span_id and span.attributes["awf.stage.name"] == "plan"
    ]
    assert turn.parent == plan.span_id
    assert (
        turn.attributes["gen_ai.operation.name"] == "invoke_agent" and turn.attributes["gen_ai.agent.name"] == "planner"
    )
    assert turn.attributes["awf.turn.outcome"] == "answered" and turn.attributes["awf.agent.harness"] == "exec"
    assert (project.path / "traceparent.txt").read_text()[:-2] == f"00-{trace_id}-{turn.span_id}-"

    # The metrics: attempts by ending, turns by outcome, stage durations.
    attempts = {
        (attrs["awf.attempt.ending"], value) for name, attrs, value in receiver.points if name == "awf.attempts"
    }
    assert attempts == {("stopped", 1.0), ("completed", 1.0)}
    turns = [(attrs["awf.turn.outcome"], value) for name, attrs, value in receiver.points if name == "awf.turns"]
    assert turns == [("answered", 1.0)]
    durations = {attrs["awf.stage.name"] for name, attrs, _ in receiver.points if name == "awf.stage.duration"}
    assert durations == {"plan", "build"}


@needs_otel
def test_traceparent_makes_the_first_attempt_a_child_of_the_callers_span_and_is_recorded(project: Project) -> None:
    with Receiver() as receiver:
        stopped = awf_run(project, receiver.env(TRACEPARENT=CALLER), "--id", "p1", STOP_IN_BUILD="1")
        assert stopped.returncode == 3, stopped.stderr
        later = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        went_on = awf_run(project, receiver.env(TRACEPARENT=later), "--id", "p1", "--continue")
        assert went_on.returncode == 0, went_on.stderr

    line = run_line(project, "p1")
    assert line["trace_id"] == "0af7651916cd43dd8448eb211c80319c" and line["trace_parent"] == CALLER
    first, second = receiver.named("awf.attempt")
    assert first.trace_id == second.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert first.parent == "b7ad6b7169203331" and second.parent == ""
    # A continue started under another caller's span stays in the run's trace and links to that span.
    assert second.links == [("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")]


@needs_otel
def test_ctrl_c_in_the_middle_of_a_stage_still_exports_the_attempt_with_its_status(project: Project) -> None:
    mark = project.path / "in-build"
    project.write("traced.py", WORKFLOW)
    with Receiver() as receiver:
        process = project.start(
            "run", str(project.path / "traced.py"), "--id", "c1", env={**receiver.env(), "WAIT_IN_BUILD": str(mark)}
        )
        project.wait_for(mark, timeout=60)
        send(process, signal.SIGINT)
        ended = finish(process, timeout=30)
        assert ended.code == 130, ended.stderr
        [attempt] = receiver.named("awf.attempt")
    assert (
        attempt.attributes["awf.attempt.ending"] == "cancelled" and attempt.attributes["awf.attempt.exit_code"] == 130
    )
    assert attempt.status == 2 and attempt.message.startswith("cancelled")
    [build] = [span for span in receiver.named("awf.stage") if span.attributes["awf.stage.name"] == "build"]
    assert build.parent == attempt.span_id and build.status == 2


@needs_otel
def test_ctrl_c_again_while_the_spans_go_out_leaves_the_attempts_ending_and_one_warning(project: Project) -> None:
    mark = project.path / "in-build"
    project.write("traced.py", WORKFLOW)
    with Receiver(silent=True) as receiver:
        process = project.start(
            "run", str(project.path / "traced.py"), "--id", "c2", env={**receiver.env(), "WAIT_IN_BUILD": str(mark)}
        )
        project.wait_for(mark, timeout=60)
        send(process, signal.SIGINT)
        deadline = time.monotonic() + 30
        while not receiver.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        send(process, signal.SIGINT)  # while the send waits on a collector that never answers
        ended = finish(process, timeout=30)
    assert ended.code == 130, ended.stderr
    assert awf_lines(ended.stderr) == [
        "awf: traces and metrics not sent: interrupted while sending; the run is not affected"
    ]
    assert project.log("traced", "c2")[-1]["kind"] == "attempt-end"


@needs_otel
def test_the_attempts_timeout_still_exports_the_attempt_as_timed_out(project: Project) -> None:
    with Receiver() as receiver:
        ended = awf_run(project, receiver.env(), "--id", "o1", "--timeout", "3s", WAIT_IN_BUILD=str(project.path / "m"))
        assert ended.returncode == 1, ended.stderr
    [attempt] = receiver.named("awf.attempt")
    assert attempt.attributes["awf.attempt.ending"] == "timed-out" and attempt.status == 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@needs_otel
def test_a_collector_that_is_down_costs_under_two_seconds_and_one_warning(project: Project) -> None:
    quiet = awf_run(project, {}, "--id", "d0")
    assert quiet.returncode == 0, quiet.stderr
    down = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    began = time.monotonic()
    ended = awf_run(project, down, "--id", "d1")
    took = time.monotonic() - began
    assert ended.returncode == 0, ended.stderr
    [warning] = awf_lines(ended.stderr)
    assert "traces and metrics not sent" in warning and "the run is not affected" in warning
    began = time.monotonic()
    awf_run(project, {}, "--id", "d2")
    assert took - (time.monotonic() - began) < 2.0


@needs_otel
def test_a_collector_that_never_answers_is_waited_for_two_seconds_at_most(project: Project) -> None:
    quiet = awf_run(project, {}, "--id", "h0")
    assert quiet.returncode == 0, quiet.stderr
    with Receiver(silent=True) as receiver:
        began = time.monotonic()
        ended = awf_run(project, receiver.env(), "--id", "h1")
        took = time.monotonic() - began
    assert ended.returncode == 0, ended.stderr
    [warning] = awf_lines(ended.stderr)
    assert f"the collector at {receiver.url}/v1/traces did not answer within 2 s" in warning
    began = time.monotonic()
    awf_run(project, {}, "--id", "h2")
    baseline = time.monotonic() - began
    # The bound, and the import of OpenTelemetry beside it (a loaded machine slows both runs).
    assert took >= 2.0 and took - baseline < 3.5, (took, baseline)


@needs_otel
def test_a_collector_that_refuses_is_one_warning_and_the_run_completes(project: Project) -> None:
    with Receiver(status=400) as receiver:
        ended = awf_run(project, receiver.env(), "--id", "r1")
    assert ended.returncode == 0, ended.stderr
    [warning] = awf_lines(ended.stderr)
    assert "traces and metrics not sent" in warning and receiver.requests


def test_without_the_otel_extra_the_variables_are_one_warning_and_the_run_goes_on(project: Project) -> None:
    # A package named opentelemetry that cannot be imported stands first on the path, as if the
    # extra were not installed.
    shadow = project.path.with_name(project.path.name + "-no-otel")
    (shadow / "opentelemetry").mkdir(parents=True)
    (shadow / "opentelemetry" / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "PYTHONPATH": str(shadow)}
    ended = awf_run(project, env, "--id", "x1")
    assert ended.returncode == 0, ended.stderr
    [warning] = awf_lines(ended.stderr)
    assert "otel extra is not installed" in warning and "pip install 'awf[otel]'" in warning


def imported_otel(project: Project, *argv: str, **env: str) -> list[str]:
    """The OpenTelemetry modules the real CLI imports for `argv`, as -X importtime lists them."""
    project.write("traced.py", WORKFLOW)
    clean = {key: value for key, value in project.env.items() if not key.startswith("OTEL_")}
    ended = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "awf", *argv],
        cwd=project.path,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ended.returncode == 0, ended.stderr
    return [
        line
        for line in ended.stderr.splitlines()
        if "| opentelemetry" in line or "|   opentelemetry" in line or " opentelemetry." in line
    ]


@needs_otel
def test_a_run_that_does_not_ask_imports_no_opentelemetry(project: Project) -> None:
    assert imported_otel(project, "run", "traced.py", "--id", "i1") == []
    assert imported_otel(project, "runs") == []
    with Receiver() as receiver:
        assert imported_otel(project, "run", "traced.py", "--id", "i2", **receiver.env()) != []


def test_an_unsupported_exporter_is_said_and_nothing_is_exported(project: Project) -> None:
    ended = awf_run(project, {"OTEL_TRACES_EXPORTER": "zipkin"}, "--id", "z1")
    assert ended.returncode == 0, ended.stderr
    assert awf_lines(ended.stderr) == [
        "awf: OTEL_TRACES_EXPORTER=zipkin: awf exports traces over OTLP only (otlp or none)"
    ]


def test_trace_ids_are_recorded_even_when_nothing_is_exported(project: Project) -> None:
    ended = awf_run(project, {}, "--id", "n1")
    assert ended.returncode == 0, ended.stderr
    line = run_line(project, "n1")
    assert isinstance(line["trace_id"], str) and len(line["trace_id"]) == 32 and "trace_parent" not in line


FIX = r"""import os
import sys

import awf

AGENT = "import subprocess; subprocess.run(['awf', 'answer', '{\"branch\": \"fix/212\"}'], check=True)"


@awf.workflow(name="fix", description="Plan with an agent, then build.")
async def fix(wf):
    async def plan():
        runtime = {"harness": "exec", "command": [sys.executable, "-c", AGENT]}
        planner = await wf.agents.open(key="planner", runtime=runtime)
        turn = await planner.run(prompt="Plan a fix for #212.", schema={"type": "object"})
        if not turn.outcome.answered:
            wf.stop(f"no plan: {turn.outcome.reason}")
        return turn.outcome.value

    branch = (await wf.stage("plan", plan, result={"type": "object"}))["branch"]

    async def build():
        if os.environ.get("NOT_YET"):
            wf.stop("the build machine is down")
        return {"commit": "4be1c7e", "branch": branch}

    return await wf.stage("build", build, result={"type": "object"})
"""


def span_tree(receiver: Receiver) -> list[str]:
    """The spans as docs/traces.md shows them: each under its parent, its attributes and events
    beneath it (host and pid left out, as they differ from machine to machine)."""
    known = {span.span_id for span in receiver.spans}
    children: dict[str, list[Span]] = {}
    for span in receiver.spans:
        children.setdefault(span.parent, []).append(span)
    lines = [f"trace {receiver.spans[0].trace_id}"]

    def show(span: Span, depth: int) -> None:
        status = {0: "", 1: " OK", 2: f" ERROR {span.message!r}"}[span.status]
        indent = "  " * depth
        lines.append(f"{indent}{span.name}  (… ms){status}")
        for key, value in span.attributes.items():
            if key not in ("host.name", "process.pid"):
                lines.append(f"{indent}    {key} = {value!r}")
        for name, attributes in span.events:
            lines.append(f"{indent}    event {name} {attributes}")
        for child in sorted(children.get(span.span_id, []), key=lambda one: one.start):
            show(child, depth + 1)

    for root in sorted((s for s in receiver.spans if s.parent not in known), key=lambda one: one.start):
        if root.parent:
            lines.append(f"(parent {root.parent}: the caller's span)")
        show(root, 0)
    return lines


@needs_otel
def test_the_span_tree_in_the_docs_is_what_a_real_run_exports(project: Project) -> None:
    project.write("fix.py", FIX)
    caller = {"TRACEPARENT": CALLER}
    with Receiver() as receiver:
        run = ["awf", "run", "fix.py", "--id", "212"]
        env = {**project.env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "awf"}
        stopped = subprocess.run(run, cwd=project.path, env={**env, **caller, "NOT_YET": "1"}, capture_output=True)
        assert stopped.returncode == 3, stopped.stderr
        went_on = subprocess.run([*run, "--continue"], cwd=project.path, env=env, capture_output=True)
        assert went_on.returncode == 0, went_on.stderr
    page = (Path(__file__).resolve().parent.parent / "docs" / "traces.md").read_text()
    shown = page.split("```\ntrace ", 1)[1].split("```", 1)[0]
    documented = [re.sub(r"\(\d+ ms\)", "(… ms)", line) for line in ("trace " + shown).splitlines()]
    assert span_tree(receiver) == documented


WAITS = """
import awf


@awf.workflow(name="waits", description="Waits for CI, then is done.", events={"ci": None})
async def waits(wf):
    async def check():
        ci = await wf.events.receive("ci")
        return {"passed": ci.value["passed"]}

    return await wf.stage("check", check, result={"type": "object"})
"""


@needs_otel
def test_a_wait_answered_after_a_park_is_a_span_from_the_park_to_the_event_taken(project: Project) -> None:
    project.write("waits.py", WAITS)
    with Receiver() as receiver:
        env = receiver.env()
        parked = project.awf("run", "waits.py", "--id", "w1", env=env)
        assert parked.code == 0, parked.stderr
        sent = project.awf("send", "waits/w1", "ci", "--data", '{"passed": true}', "--event-id", "ci-1", "--no-wake")
        assert sent.code == 0, sent.stderr
        woke = project.awf("wake", env=env)
        assert woke.code == 0, woke.stderr
        receiver.wait_for("awf.attempt", 2)
    first, second = receiver.named("awf.attempt")
    assert first.attributes["awf.attempt.ending"] == "parked" and first.status == 1
    assert [name for name, _ in first.events] == ["awf.wait.parked"]
    [wait] = receiver.named("awf.wait")
    [check] = [span for span in receiver.named("awf.stage") if span.parent == second.span_id]
    assert wait.parent == check.span_id and wait.trace_id == first.trace_id
    assert wait.attributes["awf.wait"] == "check/receive:ci#1" and wait.attributes["awf.wait.parked"] is True
    assert wait.attributes["awf.event.name"] == "ci" and wait.attributes["awf.event.id"] == "ci-1"
    assert first.start <= wait.start <= first.end < wait.end  # from the park to the event taken


def test_the_tracing_observer_hands_on_every_call_the_engine_makes() -> None:
    # A call it lacks would fail the attempt only when traces are on: held here for all of them.
    pytest.importorskip("opentelemetry.sdk", reason="pip install -e '.[otel]'")
    from awf.engine.observer import Observer
    from awf.view.traces import Traced

    calls = {name for name in vars(Observer) if not name.startswith("_") and callable(getattr(Observer, name))}
    assert calls and not sorted(calls - set(vars(Traced))), "the tracing observer does not hand these on"
