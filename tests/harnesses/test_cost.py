"""What a run's agents cost, however its attempts ended: the real `awf run`, the real CLI of each
harness that states `session_file`, the fake model server reporting known token counts.

A turn cut short (kill -9, Ctrl-C, --timeout) never gets its CLI's result line; the next attempt
reads what it used from the agent's session file and counts it, once. Part of the conformance
suite: a harness joins by its line in HARNESSES (test_conformance.py).
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from cli_projects import answer, point_clis_at
from conftest import Project, finish, send
from fakemodel import FakeModel, Shell, Silence, Text, Usage
from test_conformance import HARNESSES, Subject

from awf.record.costs import money

pytestmark = pytest.mark.harnesses
CLAUDE = next(subject for subject in HARNESSES if subject.name == "claude")

VALUE = {"done": True}

WORKFLOW = """
import json
import os

import awf

DONE = {"type": "object", "required": ["done"], "properties": {"done": {"type": "boolean"}}}


@awf.workflow(name="work", description="One agent's turn in each of two stages.")
async def work(wf):
    runtime = json.loads(os.environ["AGENT_RUNTIME"])

    async def ask(prompt):
        agent = await wf.agents.open(key="worker", runtime=runtime)
        turn = await agent.run(prompt=prompt, schema=DONE, timeout=float(os.environ.get("TURN_TIMEOUT", "300")))
        if not turn.outcome.answered and os.environ.get("ASK_AGAIN"):
            turn = await agent.run(prompt="Try again.", schema=DONE, timeout=300)
        if not turn.outcome.answered:
            wf.stop(f"{turn.outcome.kind}: {turn.outcome.reason}")
        return turn.outcome.value

    first = await wf.stage("first", lambda: ask("Do the first part."), result=DONE)
    if os.environ.get("ONE_STAGE"):
        return first
    return await wf.stage("second", lambda: ask("Do the second part."), result=DONE)
"""

# The call the fake answers before the turn is cut short: its tokens are what must be counted.
FIRST_CALL = Usage(input=1000, cached=200, output=50)
FIRST_TOKENS = {"input": 1200, "cached": 200, "cache_write": 0, "output": 50, "reasoning": 0}


class Costed:
    """A project whose `awf run` reaches one real CLI, pointed at the fake model."""

    def __init__(self, project: Project, subject: Subject, model: FakeModel) -> None:
        self.project = project
        self.harness = subject.name
        self.model = model
        # Slow to give up on a silent model: the attempt is cut short first, as the test says.
        point_clis_at(project, [subject.setup], model.url, patient=True)
        project.env["AGENT_RUNTIME"] = json.dumps({"harness": subject.name, **subject.setup.runtime})
        self.workflow = project.write("work.py", WORKFLOW)

    def start(self, run_id: str, *flags: str) -> Any:
        return self.project.start("run", str(self.workflow), "--id", run_id, *flags)

    def run(self, run_id: str, *flags: str, **env: str) -> Any:
        return self.project.awf("run", str(self.workflow), "--id", run_id, *flags, env=env, timeout=180)

    def log(self, run_id: str) -> list[dict[str, Any]]:
        return self.project.log("work", run_id)

    def wait_for_calls(self, count: int, process: Any, timeout: float = 90) -> None:
        """Until the fake has received `count` conversation requests: the ones before answered in full."""
        deadline = time.monotonic() + timeout
        while len(self.model.conversation) < count:
            if process.poll() is not None:
                raise AssertionError(f"awf ended first: {process.communicate()}")
            assert time.monotonic() < deadline, f"only {len(self.model.conversation)} model calls came"
            time.sleep(0.05)

    def end_leftovers(self, run_id: str) -> None:
        """End the agent processes a crashed attempt left running, as its next attempt tells you to."""
        for entry in self.log(run_id):
            if entry["kind"] == "agent-process":
                try:
                    os.killpg(entry["pid"], signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def usage_lines(self, run_id: str) -> list[dict[str, Any]]:
        return [entry for entry in self.log(run_id) if entry["kind"] == "usage"]

    def run_cost(self, run_id: str) -> dict[str, Any]:
        listed = self.project.awf("runs", "--json")
        assert listed.code == 0, listed.stderr
        [summary] = [run for run in listed.out["runs"] if run["id"] == run_id]
        return summary


@pytest.fixture(
    params=[pytest.param(subject, id=subject.name) for subject in HARNESSES if subject.capabilities.session_file]
)
def costed(request: pytest.FixtureRequest, project: Project, model: FakeModel) -> Costed:
    return Costed(project, request.param, model)


def cut_short(costed: Costed, run_id: str, how: str) -> Any:
    """Attempt 1: the model answers one call (a shell command), then says nothing; the attempt ends `how`."""
    costed.model.script(Shell("echo working", say="Working.", usage=FIRST_CALL), Silence())
    flags = ("--timeout", "25s") if how == "timeout" else ()
    process = costed.start(run_id, *flags)
    costed.wait_for_calls(2, process)
    if how == "kill":
        process.kill()
        process.wait(timeout=30)
        costed.end_leftovers(run_id)  # killing awf leaves its agent working: end it, as a person would
        return None
    if how == "interrupt":
        send(process, signal.SIGINT)
    return finish(process, timeout=120)


def assert_recovered_on_continue(costed: Costed, run_id: str) -> None:
    costed.model.script(answer(VALUE), Text("Done."), answer(VALUE), Text("Done."))
    second = costed.run(run_id, "--continue")
    assert second.code == 0, second.stderr

    [usage] = costed.usage_lines(run_id)
    assert usage["attempt"] == 1 and usage["by_attempt"] == 2 and usage["recovered"] is True
    assert (usage["agent"], usage["turn"], usage["stage"]) == ("worker", 1, "first")
    assert usage["tokens"] == FIRST_TOKENS and usage["calls"] == 1
    assert usage["cost"] > 0 and Path(usage["session_file"]).is_file()
    said = f"attempt 1 used 1,250 tokens ({money(usage['cost'])}) that it could not record; counted now"
    assert said in second.stderr

    turns = [entry for entry in costed.log(run_id) if entry["kind"] == "turn" and entry["attempt"] == 2]
    summary = costed.run_cost(run_id)
    assert summary["cost"] == pytest.approx(usage["cost"] + sum(turn["cost"] for turn in turns))
    assert summary["cost_unknown"] == 0
    detail = costed.project.awf("runs", f"work/{run_id}", "--json").out
    [recovered] = [row for row in detail["costs"] if row["recovered"]]
    assert (recovered["attempt"], recovered["stage"], recovered["agent"]) == (1, "first", "worker")
    assert recovered["cost"] == pytest.approx(usage["cost"])
    assert "recovered: read from its session by a later attempt" in costed.project.awf("runs", f"work/{run_id}").stdout
    # A later continue counts nothing twice.
    assert second.out["cost"]["run"]["cost"] == pytest.approx(summary["cost"])


def test_a_turn_killed_with_awf_is_counted_from_its_session_by_the_next_attempt(costed: Costed) -> None:
    cut_short(costed, "k1", "kill")
    starts = [entry for entry in costed.log("k1") if entry["kind"] in ("turn-start", "session")]
    assert starts and starts[0]["kind"] == "turn-start" and starts[0]["agent"] == "worker"
    assert not [entry for entry in costed.log("k1") if entry["kind"] == "turn"]  # the crash left no turn line
    assert_recovered_on_continue(costed, "k1")


# codex names its thread only once it runs: a kill before that leaves nothing to read, as it must.
NAMED_BEFORE = [pytest.param(s, id=s.name) for s in HARNESSES if s.capabilities.session_file and s.name != "codex"]


@pytest.mark.parametrize("subject", NAMED_BEFORE)
def test_a_turn_killed_before_any_reply_still_says_where_its_session_was_to_be(
    project: Project, model: FakeModel, subject: Subject
) -> None:
    costed = Costed(project, subject, model)
    # Killed as the first model call arrives: the agent has named no session of its own yet, and a
    # turn that left nothing to read must still be counted (as unknown, and why), never passed over.
    costed.model.script(Silence())
    process = costed.start("f1")
    costed.wait_for_calls(1, process)
    process.kill()
    process.wait(timeout=30)
    costed.end_leftovers("f1")
    [start] = [entry for entry in costed.log("f1") if entry["kind"] == "turn-start"]
    sessions = [entry for entry in costed.log("f1") if entry["kind"] == "session"]
    assert start.get("session") or start.get("session_file") or sessions, start

    costed.model.script(answer(VALUE), Text("Done."), answer(VALUE), Text("Done."))
    second = costed.run("f1", "--continue")
    assert second.code == 0, second.stderr
    [usage] = costed.usage_lines("f1")
    assert usage["attempt"] == 1 and usage["recovered"] is True
    assert usage["tokens"] is not None or usage["unknown"], usage


def test_a_turn_cancelled_by_ctrl_c_before_its_result_is_counted_by_the_next_attempt(costed: Costed) -> None:
    ended = cut_short(costed, "i1", "interrupt")
    assert ended.code == 130, ended.stderr
    [turn] = [entry for entry in costed.log("i1") if entry["kind"] == "turn"]
    assert turn["outcome"] == "cancelled" and turn["unreported"] is True and turn["usage"] is None
    assert_recovered_on_continue(costed, "i1")


def test_a_turn_ended_by_the_attempts_timeout_is_counted_by_the_next_attempt(costed: Costed) -> None:
    ended = cut_short(costed, "t1", "timeout")
    assert ended.code == 1, ended.stderr
    [turn] = [entry for entry in costed.log("t1") if entry["kind"] == "turn"]
    assert turn["outcome"] in ("timed-out", "cancelled") and turn["unreported"] is True
    assert_recovered_on_continue(costed, "t1")


def test_a_session_file_that_is_gone_gives_unknown_usage_and_says_why(project: Project, model: FakeModel) -> None:
    costed = Costed(project, CLAUDE, model)
    cut_short(costed, "g1", "kill")
    [start] = [entry for entry in costed.log("g1") if entry["kind"] == "turn-start"]
    Path(start["session_file"]).unlink()

    model.script(answer(VALUE), Text("Done."), answer(VALUE), Text("Done."))
    second = costed.run("g1", "--continue")
    assert second.code == 0, second.stderr
    [usage] = costed.usage_lines("g1")
    assert usage["tokens"] is None and usage["cost"] is None and usage["recovered"] is True
    assert usage["unknown"] == f"the session file {start['session_file']} is gone"
    assert "is gone (agent worker, turn 1)" in second.stderr
    summary = costed.run_cost("g1")
    assert summary["cost_unknown"] == 1 and summary["cost"] > 0  # attempt 2's turns are known; this one is not
    listing = project.awf("runs").stdout
    assert "+ 1 turn unknown" in listing


# A million prompt tokens of claude-sonnet-4-5: $3 a call.
BIG = Usage(input=1_000_000, cached=0, output=10)


def test_max_cost_keeps_the_turn_that_passed_it_and_stops_before_the_next(project: Project, model: FakeModel) -> None:
    costed = Costed(project, CLAUDE, model)
    model.script(answer(VALUE, BIG), Text("Done.", usage=BIG))
    first = costed.run("b1", "--max-cost", "5.00")
    assert first.code == 3, first.stderr
    assert "the run has cost $6.00, more than its budget of $5.00 (--max-cost)" in first.stderr
    assert "stopped before agent worker's turn 2 in stage second started" in first.stderr
    # The turn that passed the budget was paid for: its stage succeeded and is recorded.
    assert json.loads((project.path / ".awf/runs/work/b1/stages/first.json").read_text())["value"] == VALUE
    assert [e["outcome"] for e in costed.log("b1") if e["kind"] == "turn"] == ["answered"]
    # What was spent (a little over $6), and nothing of the stopped stage this attempt, to a whole dollar.
    higher = f"{math.ceil(costed.run_cost('b1')['cost']):.2f}"
    assert higher == "7.00" and f"--continue --max-cost {higher}" in first.stderr

    # A continue keeps the budget: the run is over it, so it stops before another turn is paid for.
    again = costed.run("b1", "--continue")
    assert again.code == 3, again.stderr
    assert "stopped before agent worker's turn 1 in stage second started" in again.stderr
    assert len([e for e in costed.log("b1") if e["kind"] == "turn"]) == 1

    # The printed command goes on: the first stage's record is reused, nothing is paid twice.
    model.script(answer(VALUE), Text("Done."))
    went_on = costed.run("b1", "--continue", "--max-cost", higher)
    assert went_on.code == 0, went_on.stderr
    starts = [e for e in costed.log("b1") if e["kind"] == "attempt-start"]
    assert [start["max_cost"] for start in starts] == [5.0, 5.0, 7.0]
    assert len([e for e in costed.log("b1") if e["kind"] == "turn"]) == 2


def test_a_turn_past_max_cost_that_ends_the_work_completes_the_run(project: Project, model: FakeModel) -> None:
    costed = Costed(project, CLAUDE, model)
    model.script(answer(VALUE, BIG), Text("Done.", usage=BIG))
    done = costed.run("b2", "--max-cost", "1.00", ONE_STAGE="1")
    assert done.code == 0, done.stderr
    assert done.out["outcome"] == "completed" and done.out["value"] == VALUE
    assert costed.run_cost("b2")["cost"] == pytest.approx(6.0, abs=0.01)


def test_the_budget_that_goes_on_fits_the_stopped_stage_again(project: Project, model: FakeModel) -> None:
    costed = Costed(project, CLAUDE, model)
    # Turn 1 ends unanswered after the recovery prompt ($3 + $3); the stage asks again.
    model.script(Text("Thinking.", usage=BIG), Text("Still thinking.", usage=BIG))
    first = costed.run("b3", "--max-cost", "1.00", ONE_STAGE="1", ASK_AGAIN="1")
    assert first.code == 3, first.stderr
    assert "stopped before agent worker's turn 2 in stage first started" in first.stderr
    # Some $6 spent, all of it by the stopped stage this attempt: redoing it fits in twice that.
    spent = costed.run_cost("b3")["cost"]
    higher = f"{math.ceil(2 * spent):.2f}"
    assert f"--continue --max-cost {higher}" in first.stderr
    [end] = [e for e in costed.log("b3") if e["kind"] == "attempt-end"]
    assert end["go_on"].endswith(f"--continue --max-cost {higher}")

    model.script(Text("Thinking.", usage=BIG), Text("Still thinking.", usage=BIG), answer(VALUE), Text("Done."))
    again = costed.run("b3", "--continue", "--max-cost", higher, ONE_STAGE="1", ASK_AGAIN="1")
    assert again.code == 0, again.stderr


def test_max_cost_is_dollars_above_zero(project: Project) -> None:
    project.write(
        "flow.py", "import awf\n\n@awf.workflow(name='flow', description='d')\nasync def flow(wf):\n    return 1\n"
    )
    refused = project.awf("run", "flow.py", "--max-cost", "lots")
    assert refused.code == 2
    assert refused.stderr.startswith("awf: --max-cost is dollars above zero, such as 5.00, not 'lots'")


def test_a_turn_cut_by_its_own_timeout_is_counted_once_when_the_attempt_completes(costed: Costed) -> None:
    # Turn 1: one call answered, then the model is silent until the turn's own timeout. Turn 2 of the
    # same agent, in the same session, answers; the attempt completes, so it counts turn 1 itself.
    costed.model.script(
        Shell("echo working", say="Working.", usage=FIRST_CALL), Silence(), answer(VALUE), Text("Done.")
    )
    done = costed.run("o1", ONE_STAGE="1", ASK_AGAIN="1", TURN_TIMEOUT="40")
    assert done.code == 0, done.stderr

    log = costed.log("o1")
    first, second = [entry for entry in log if entry["kind"] == "turn"]
    assert first["outcome"] == "timed-out" and first["unreported"] is True
    # The second turn's tokens are its own two calls, not the first turn's too.
    assert (second["usage"]["input"], second["usage"]["output"]) == (240, 24), second["usage"]
    [usage] = [entry for entry in log if entry["kind"] == "usage"]
    assert (usage["attempt"], usage["by_attempt"], usage["turn"]) == (1, 1, 1)
    assert usage["tokens"] == FIRST_TOKENS
    assert done.out["cost"]["run"]["cost"] == pytest.approx(usage["cost"] + second["cost"])
