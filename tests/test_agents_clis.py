"""The claude and codex runtimes end to end: the real `awf run`, the real CLIs, the fake model server.

Each test scripts what the model says; the CLI really runs the `awf answer` the model asks for.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, finish, send
from fakemodel import FakeModel, Shell, Silence, Status, Text, Usage, unused_port
from fakemodel.clis import base_env, claude_env, codex_env, require, write_codex_config

PLAN_VALUE = {"branch": "fix/212", "steps": ["parse years before 1970"]}
OTHER_PLAN = {"branch": "fix/212-again", "steps": ["keep the sign of the year"]}

WORKFLOW = """
import json
import os

import awf

PLAN = {
    "type": "object",
    "required": ["branch", "steps"],
    "additionalProperties": False,
    "properties": {"branch": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}}},
}


@awf.workflow(name="ask", description="Ask one agent for a plan.")
async def ask(wf):
    runtime = json.loads(os.environ["AGENT_RUNTIME"])
    timeout = float(os.environ.get("TURN_TIMEOUT", "60"))

    async def plan():
        agent = await wf.agents.open(key="planner", runtime=runtime, instructions="You plan fixes.")
        turn = await agent.run(prompt="Plan a fix for #212.", schema=PLAN, timeout=timeout)
        if not turn.outcome.answered:
            wf.stop(f"{turn.outcome.kind}: {turn.outcome.reason}")
        if not os.environ.get("SECOND_TURN"):
            return turn.outcome.value
        again = await agent.run(prompt="Plan it once more.", schema=PLAN, timeout=timeout)
        if not again.outcome.answered:
            wf.stop(f"{again.outcome.kind}: {again.outcome.reason}")
        return again.outcome.value

    return await wf.stage("plan", plan, result=PLAN)
"""

HARNESSES = ["claude", "codex"]


def answer(value: Any) -> Shell:
    """The model runs `awf answer` with the value as one argument, as the claude hint asks."""
    return Shell("awf answer " + shlex.quote(json.dumps(value)))


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


class Agents:
    """A project whose `awf run` reaches the real CLIs, pointed at the fake model."""

    def __init__(self, project: Project, harness: str, url: str) -> None:
        require(harness)
        self.project = project
        self.harness = harness
        home = project.path.parent / "home"
        project.env = {**base_env(), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
        if harness == "claude":
            project.env.update(claude_env(url, home))
        else:
            project.env.update(codex_env(home))
            write_codex_config(home, url)
        home.mkdir(parents=True, exist_ok=True)
        self.workflow = project.write("ask.py", WORKFLOW)

    def run(self, run_id: str, runtime: dict[str, Any] | None = None, **env: str) -> Any:
        runtime = runtime or {"harness": self.harness}
        return self.project.awf(
            "run", str(self.workflow), "--id", run_id, env={"AGENT_RUNTIME": json.dumps(runtime), **env}, timeout=120
        )

    def turns(self, run_id: str) -> list[dict[str, Any]]:
        return [entry for entry in self.project.log("ask", run_id) if entry["kind"] == "turn"]


@pytest.fixture(params=HARNESSES)
def agents(request: pytest.FixtureRequest, project: Project, model: FakeModel) -> Agents:
    return Agents(project, request.param, model.url)


def test_a_typed_answer_is_accepted(agents: Agents, model: FakeModel) -> None:
    model.script(answer(PLAN_VALUE), Text("Done."))
    done = agents.run("typed")

    assert done.code == 0, done.stderr
    assert agents.project.stage("ask", "typed", "plan")["value"] == PLAN_VALUE
    [turn] = agents.turns("typed")
    assert turn["outcome"] == "answered" and turn["by"] == "awf answer" and turn["harness"] == agents.harness
    assert turn["session"]
    first = model.conversation[0]
    assert "Plan a fix for #212." in first.text() and "You plan fixes." in first.text()
    assert "awf answer" in first.text()


def test_an_invalid_answer_is_refused_by_awf_answer_and_corrected(agents: Agents, model: FakeModel) -> None:
    model.script(answer({"branch": 5}), answer(PLAN_VALUE), Text("Done."))
    done = agents.run("fixed")

    assert done.code == 0, done.stderr
    assert agents.project.stage("ask", "fixed", "plan")["value"] == PLAN_VALUE
    # What `awf answer` said went back to the model as the command's output.
    told = model.conversation[1].text()
    assert "is not of type 'string'" in told and "'steps' is a required property" in told
    [turn] = agents.turns("fixed")
    assert turn["outcome"] == "answered" and turn["nudged"] is False


def test_no_answer_then_the_recovery_prompt_in_the_same_session_then_unanswered(
    agents: Agents, model: FakeModel
) -> None:
    model.script(Text("I looked at the parser."), Text("Still looking."))
    done = agents.run("silent")

    assert done.code == 3, done.stderr
    [turn] = agents.turns("silent")
    assert turn["outcome"] == "unanswered" and turn["nudged"] is True
    recovery = model.conversation[1].text()
    assert "You stopped without giving awf your answer" in recovery
    assert "I looked at the parser." in recovery  # the session went on: the model sees its own words
    assert len(model.conversation) == 2


@pytest.mark.parametrize(
    ("code", "message", "words"),
    [
        (401, "invalid x-api-key", {"claude": "Invalid API key", "codex": "401 Unauthorized: invalid x-api-key"}),
        (500, "the fake model broke", {"claude": "API Error: 500 the fake model broke", "codex": "high demand"}),
    ],
)
def test_a_refusing_model_server_fails_the_turn_in_the_clis_words(
    agents: Agents, model: FakeModel, code: int, message: str, words: dict[str, str]
) -> None:
    model.script(Status(code, message, times=None))
    done = agents.run(f"refused-{code}")

    assert done.code == 3, done.stderr
    [turn] = agents.turns(f"refused-{code}")
    assert turn["outcome"] == "failed" and turn["nudged"] is False
    assert turn["reason"].startswith(f"{agents.harness}: ") and words[agents.harness] in turn["reason"]
    if code == 401 and agents.harness == "codex":
        assert "codex login" in turn["reason"]
    assert words[agents.harness] in done.stderr


def test_a_model_server_that_is_down_fails_the_turn_soon(project: Project, request: pytest.FixtureRequest) -> None:
    for harness in HARNESSES:
        require(harness)
    url = f"http://127.0.0.1:{unused_port()}"
    started = time.monotonic()
    claude = Agents(project, "claude", url)
    done = claude.run("down-claude")
    assert done.code == 3, done.stderr
    [turn] = claude.turns("down-claude")
    assert turn["outcome"] == "failed" and turn["reason"].startswith("claude: ")

    codex = Agents(project, "codex", url)
    done = codex.run("down-codex", {"harness": "codex", "reconnect_limit": 3}, TURN_TIMEOUT="120")
    assert done.code == 3, done.stderr
    [turn] = codex.turns("down-codex")
    # Codex itself would reconnect forever; awf ends it, in codex's own words, long before the turn's deadline.
    assert turn["outcome"] == "failed"
    assert turn["reason"].startswith("codex cannot reach its model: it kept reconnecting for 3 s")
    assert "Reconnecting... waiting for network" in turn["reason"]
    assert turn["seconds"] < 30
    assert time.monotonic() - started < 90


def test_a_second_turn_resumes_the_agents_session(agents: Agents, model: FakeModel) -> None:
    model.script(answer(PLAN_VALUE), Text("First plan given."), answer(OTHER_PLAN), Text("Second plan given."))
    done = agents.run("twice", SECOND_TURN="1")

    assert done.code == 0, done.stderr
    assert agents.project.stage("ask", "twice", "plan")["value"] == OTHER_PLAN
    first, second = agents.turns("twice")
    assert first["session"] == second["session"] and second["turn"] == 2
    later = model.conversation[2].text()
    assert "Plan it once more." in later
    assert "Plan a fix for #212." in later and "First plan given." in later


def test_ctrl_c_mid_turn_ends_the_clis_process_group(agents: Agents, model: FakeModel) -> None:
    model.script(Silence())
    process = agents.project.start(
        "run", str(agents.workflow), "--id", "stopped", env={"AGENT_RUNTIME": json.dumps({"harness": agents.harness})}
    )
    deadline = time.monotonic() + 60
    while not model.conversation:
        assert time.monotonic() < deadline, "the CLI never asked the model"
        time.sleep(0.05)
    send(process)
    done = finish(process)

    assert done.code == 130, done.stderr
    [turn] = agents.turns("stopped")
    assert turn["outcome"] == "cancelled"
    [spawned] = [entry for entry in agents.project.log("ask", "stopped") if entry["kind"] == "agent-process"]
    assert not group_alive(spawned["pid"])


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return any(_pgid(pid) == pgid and _state(pid) not in ("Z", "X") for pid in os.listdir("/proc") if pid.isdigit())


def _stat(pid: str) -> list[str]:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return text[text.rfind(")") + 2 :].split()


def _pgid(pid: str) -> int | None:
    fields = _stat(pid)
    return int(fields[2]) if len(fields) > 2 else None


def _state(pid: str) -> str | None:
    fields = _stat(pid)
    return fields[0] if fields else None


def test_tokens_and_cost_of_a_turn_answered_in_its_last_message(agents: Agents, model: FakeModel) -> None:
    model.script(Text(json.dumps(PLAN_VALUE), usage=Usage(input=1000, cached=200, output=50)))
    done = agents.run("costed")

    assert done.code == 0, done.stderr
    [turn] = agents.turns("costed")
    assert turn["by"] == "the agent's output"
    usage = turn["usage"]
    assert (usage["input"], usage["cached"], usage["output"]) == (1200, 200, 50)
    assert usage["model"] == model.conversation[0].body["model"]
    assert isinstance(turn["cost"], float) and turn["cost"] > 0
    if agents.harness == "codex":
        from genai_prices import Usage as Priced
        from genai_prices import calc_price

        expected = calc_price(
            Priced(input_tokens=1200, cache_read_tokens=200, output_tokens=50),
            model_ref=usage["model"],
            provider_id="openai",
        )
        assert turn["cost"] == pytest.approx(float(expected.total_price))
    [totals] = [line for line in done.stderr.splitlines() if line.strip().startswith("totals:")]
    assert "1 turn · $" in totals


def test_tokens_and_cost_of_a_turn_answered_through_awf_answer(agents: Agents, model: FakeModel) -> None:
    model.script(answer(PLAN_VALUE), Text("Done."))
    done = agents.run("costed-answer")

    assert done.code == 0, done.stderr
    [turn] = agents.turns("costed-answer")
    assert turn["usage"]["output"] > 0 and turn["cost"] is not None


def test_a_model_without_a_price_has_a_null_cost_and_says_why(project: Project, model: FakeModel) -> None:
    codex = Agents(project, "codex", model.url)
    model.script(Text(json.dumps(PLAN_VALUE)))
    done = codex.run("unpriced", {"harness": "codex", "model": "gpt-6.2-sol"})

    assert done.code == 0, done.stderr
    [turn] = codex.turns("unpriced")
    assert turn["cost"] is None
    assert turn["usage"]["cost_unknown"].endswith("has no price for gpt-6.2-sol")
    assert turn["usage"]["input"] == 120


def test_claude_without_a_login_fails_the_turn_saying_to_log_in(project: Project, model: FakeModel) -> None:
    claude = Agents(project, "claude", model.url)
    del project.env["ANTHROPIC_API_KEY"]
    done = claude.run("login")

    assert done.code == 3, done.stderr
    [turn] = claude.turns("login")
    assert turn["outcome"] == "failed"
    assert turn["reason"].startswith("claude is not logged in: run `claude` and /login, or set ANTHROPIC_API_KEY")
    assert not model.requests


def test_a_cli_too_old_for_an_option_names_the_version_needed(project: Project, model: FakeModel) -> None:
    claude = Agents(project, "claude", model.url)
    old = project.write(
        "old-claude",
        """
        #!/bin/sh
        if [ "$1" = "--version" ]; then echo "1.0.3 (Claude Code)"; exit 0; fi
        echo "error: unknown option '--effort'" >&2
        exit 1
    """,
    )
    old.chmod(0o755)
    project.env["AWF_CLAUDE"] = str(old)
    done = claude.run("old", {"harness": "claude", "effort": "high"})

    assert done.code == 3, done.stderr
    [turn] = claude.turns("old")
    assert turn["outcome"] == "failed"
    assert "(claude 1.0.3) does not know an option awf gives it: update it to 2.1.332 or newer" in turn["reason"]
    assert "unknown option '--effort'" in turn["reason"]


def test_awf_codex_that_is_not_a_program_fails_the_turn_saying_so(project: Project, model: FakeModel) -> None:
    codex = Agents(project, "codex", model.url)
    project.env["AWF_CODEX"] = str(project.path / "no-such-codex")
    done = codex.run("nowhere")

    assert done.code == 3, done.stderr
    [turn] = codex.turns("nowhere")
    assert turn["outcome"] == "failed"
    assert turn["reason"] == (
        f"codex: AWF_CODEX is {project.path / 'no-such-codex'}, which is not an executable "
        "file: fix it, or unset it to use codex on PATH"
    )


FIX_ISSUE = """
import awf

PLAN = {"type": "object", "required": ["branch", "steps"], "additionalProperties": False,
        "properties": {"branch": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}}}}
BUILT = {"type": "object", "required": ["commit"], "properties": {"commit": {"type": "string"}}}
VERDICT = {"type": "object", "required": ["approved", "findings"], "additionalProperties": False,
           "properties": {"approved": {"type": "boolean"}, "findings": {"type": "array", "items": {"type": "string"}}}}


@awf.workflow(name="fix-issue", description="Plan, build and review a fix.", version="1.0.0",
              prepare=lambda argv: {"issue": " ".join(argv)})
async def fix_issue(wf, issue):
    async def make_plan():
        planner = await wf.agents.open(key="planner", runtime="claude")
        turn = await planner.run(prompt=f"Plan a fix for {issue}.", schema=PLAN)
        if not turn.outcome.answered:
            wf.stop(f"no plan: {turn.outcome.reason}")
        return turn.outcome.value

    plan = await wf.stage("plan", make_plan, result=PLAN, summary=lambda p: p["branch"])

    async def build():
        builder = await wf.agents.open(key="builder", runtime="claude")
        turn = await builder.run(prompt=f"On {plan['branch']}, carry out: " + "; ".join(plan["steps"]), schema=BUILT)
        if not turn.outcome.answered:
            wf.stop(f"not built: {turn.outcome.reason}")
        return turn.outcome.value

    built = await wf.stage("implement", build, result=BUILT, summary=lambda b: b["commit"])

    async def review():
        reviewer = await wf.agents.open(key="reviewer", runtime="codex")
        turn = await reviewer.run(prompt=f"Review commit {built['commit']} on {plan['branch']} as a fix for {issue}.",
                                  schema=VERDICT)
        if not turn.outcome.answered:
            wf.stop(f"no review: {turn.outcome.reason}")
        return turn.outcome.value

    return await wf.stage("review", review, result=VERDICT)
"""


def test_the_seeds_fix_issue_stops_without_a_review_and_a_continue_reruns_only_the_review(
    project: Project, model: FakeModel
) -> None:
    Agents(project, "codex", model.url)  # CODEX_HOME with the fake provider
    home = project.path.parent / "home"
    project.env.update(claude_env(model.url, home))
    require("claude")
    workflow = project.write("fix_issue.py", FIX_ISSUE)
    model.script(
        answer(PLAN_VALUE),
        Text("Planned."),  # planner, claude
        answer({"commit": "4be1c07"}),
        Text("Built."),  # builder, claude
        Text("I read the diff."),
        Text("Still reading."),  # reviewer, codex: no answer, then none to the nudge
    )
    first = project.awf("run", str(workflow), "--id", "212", "--", "#212: dates before 1970 parse as null", timeout=120)
    assert first.code == 3, first.stderr
    assert "■ fix-issue/212 stopped in review (attempt 1, exit 3)" in first.stderr
    # The closing block adds up turns and cost by stage and by agent.
    [stages] = [line for line in first.stderr.splitlines() if line.startswith("  stages:")]
    [agents] = [line for line in first.stderr.splitlines() if line.startswith("  agents:")]
    assert stages.startswith("  stages:  plan 1 turn $") and "review 1 turn" in stages
    assert agents.startswith("  agents:  planner 1 turn $") and "reviewer 1 turn" in agents
    assert [r.api for r in model.conversation] == ["anthropic"] * 4 + ["openai"] * 2

    model.script(answer({"approved": True, "findings": []}), Text("Approved."))
    second = project.awf("run", str(workflow), "--id", "212", "--continue", timeout=120)
    assert second.code == 0, second.stderr
    assert second.out["value"] == {"approved": True, "findings": []}
    log = project.log("fix-issue", "212")
    assert [e["agent"] for e in log if e["kind"] == "agent" and e["attempt"] == 2] == ["reviewer"]
    [review] = [e for e in log if e["kind"] == "turn" and e["attempt"] == 2]
    assert review["harness"] == "codex" and "4be1c07 on fix/212" in review["prompt"]
    assert [r.api for r in model.conversation[6:]] == ["openai"] * 2
    assert not model.left


@pytest.mark.parametrize(
    ("page", "argv", "value"),
    [
        ("claude.md", ["plan.py", "--id", "212", "--", "#212: dates before 1970 parse as null"], PLAN_VALUE),
        ("codex.md", ["review.py", "--id", "4be1c07", "--", "4be1c07"], {"approved": True, "findings": []}),
    ],
)
def test_the_pages_example_runs_on_the_real_cli(
    project: Project, model: FakeModel, page: str, argv: list[str], value: dict[str, Any]
) -> None:
    from test_docs import DOCS, examples

    Agents(project, page.removesuffix(".md"), model.url)
    for kind, name, text in examples(DOCS / page):
        if kind == "file":
            (project.path / name).write_text(text)
    model.script(answer(value), Text("Done."))
    done = project.awf("run", *argv, timeout=120)

    assert done.code == 0, done.stderr
    assert done.out["value"] == value
