"""What only one CLI runtime does, and several together, end to end: the real `awf run`, the real CLIs,
the fake model server. What every harness does is the conformance suite's (tests/harnesses).

Each test scripts what the model says; the CLI really runs the `awf answer` the model asks for.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_projects import PLAN, CliProject, answer, point_clis_at
from conftest import Project
from fakemodel import FakeModel, Text
from fakemodel.clis import CLAUDE, CODEX, SETUPS

pytestmark = pytest.mark.harnesses  # real CLIs: CI's harness step


def test_a_model_without_a_price_has_a_null_cost_and_says_why(project: Project, model: FakeModel) -> None:
    codex = CliProject(project, CODEX, model.url)
    model.script(Text(json.dumps(PLAN)))
    done = codex.run("unpriced", {"harness": "codex", "model": "gpt-unpriced-test-model"})

    assert done.code == 0, done.stderr
    [turn] = codex.turns("unpriced")
    assert turn["cost"] is None
    assert turn["usage"]["cost_unknown"].endswith("has no price for gpt-unpriced-test-model")
    assert turn["usage"]["input"] == 120


def test_claude_without_a_login_fails_the_turn_saying_to_log_in(project: Project, model: FakeModel) -> None:
    claude = CliProject(project, CLAUDE, model.url)
    del project.env["ANTHROPIC_API_KEY"]
    done = claude.run("login")

    assert done.code == 3, done.stderr
    [turn] = claude.turns("login")
    assert turn["outcome"] == "failed"
    assert turn["reason"].startswith("claude is not logged in: run `claude` and /login, or set ANTHROPIC_API_KEY")
    assert not model.requests


def test_a_cli_too_old_for_an_option_names_the_version_needed(project: Project, model: FakeModel) -> None:
    claude = CliProject(project, CLAUDE, model.url)
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
    codex = CliProject(project, CODEX, model.url)
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
import json
import os

import awf

RUNTIMES = json.loads(os.environ["RUNTIMES"])  # the runtime of each stage's agent

PLAN = {"type": "object", "required": ["branch", "steps"], "additionalProperties": False,
        "properties": {"branch": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}}}}
BUILT = {"type": "object", "required": ["commit"], "properties": {"commit": {"type": "string"}}}
VERDICT = {"type": "object", "required": ["approved", "findings"], "additionalProperties": False,
           "properties": {"approved": {"type": "boolean"}, "findings": {"type": "array", "items": {"type": "string"}}}}


@awf.workflow(name="fix-issue", description="Plan, build and review a fix.", version="1.0.0",
              prepare=lambda argv: {"issue": " ".join(argv)})
async def fix_issue(wf, issue):
    async def make_plan():
        planner = await wf.agents.open(key="planner", runtime=RUNTIMES["planner"])
        turn = await planner.run(prompt=f"Plan a fix for {issue}.", schema=PLAN)
        if not turn.outcome.answered:
            wf.stop(f"no plan: {turn.outcome.reason}")
        return turn.outcome.value

    plan = await wf.stage("plan", make_plan, result=PLAN, summary=lambda p: p["branch"])

    async def build():
        builder = await wf.agents.open(key="builder", runtime=RUNTIMES["builder"])
        turn = await builder.run(prompt=f"On {plan['branch']}, carry out: " + "; ".join(plan["steps"]), schema=BUILT)
        if not turn.outcome.answered:
            wf.stop(f"not built: {turn.outcome.reason}")
        return turn.outcome.value

    built = await wf.stage("implement", build, result=BUILT, summary=lambda b: b["commit"])

    async def review():
        reviewer = await wf.agents.open(key="reviewer", runtime=RUNTIMES["reviewer"])
        turn = await reviewer.run(prompt=f"Review commit {built['commit']} on {plan['branch']} as a fix for {issue}.",
                                  schema=VERDICT)
        if not turn.outcome.answered:
            wf.stop(f"no review: {turn.outcome.reason}")
        return turn.outcome.value

    return await wf.stage("review", review, result=VERDICT)
"""


# The API each CLI speaks to the fake model.
DIALECTS = {"claude": "anthropic", "codex": "openai", "gemini": "gemini", "pi": "anthropic", "opencode": "anthropic"}


@pytest.mark.parametrize(
    "mix",
    [
        pytest.param(("claude", "gemini", "codex"), id="claude-gemini-codex"),
        pytest.param(("pi", "gemini", "opencode"), id="pi-gemini-opencode"),
    ],
)
def test_the_seeds_fix_issue_stops_without_a_review_and_a_continue_reruns_only_the_review(
    project: Project, model: FakeModel, mix: tuple[str, str, str]
) -> None:
    # A different CLI a stage: the planner's, the builder's and the reviewer's.
    planner, builder, reviewer = mix
    point_clis_at(project, [SETUPS[name] for name in mix], model.url)
    runtimes = {}
    for key, name in zip(("planner", "builder", "reviewer"), mix, strict=True):
        runtimes[key] = {"harness": name, **SETUPS[name].runtime}
    project.env["RUNTIMES"] = json.dumps(runtimes)
    workflow = project.write("fix_issue.py", FIX_ISSUE)
    model.script(
        answer(PLAN),
        Text("Planned."),  # the planner
        answer({"commit": "4be1c07"}),
        Text("Built."),  # the builder
        Text("I read the diff."),
        Text("Still reading."),  # the reviewer: no answer, then none to the recovery prompt
    )
    first = project.awf("run", str(workflow), "--id", "212", "--", "#212: dates before 1970 parse as null", timeout=180)
    assert first.code == 3, first.stderr
    assert "■ fix-issue/212 stopped in review (attempt 1, exit 3)" in first.stderr
    # The closing block adds up turns and cost by stage and by agent.
    [stages] = [line for line in first.stderr.splitlines() if line.startswith("  stages:")]
    [agents] = [line for line in first.stderr.splitlines() if line.startswith("  agents:")]
    assert stages.startswith("  stages:  plan 1 turn $") and "review 1 turn" in stages
    assert agents.startswith("  agents:  planner 1 turn $") and "reviewer 1 turn" in agents
    apis = [DIALECTS[planner]] * 2 + [DIALECTS[builder]] * 2 + [DIALECTS[reviewer]] * 2
    assert [r.api for r in model.conversation] == apis
    assert [e["harness"] for e in project.log("fix-issue", "212") if e["kind"] == "turn"] == list(mix)

    model.script(answer({"approved": True, "findings": []}), Text("Approved."))
    second = project.awf("run", str(workflow), "--id", "212", "--continue", timeout=180)
    assert second.code == 0, second.stderr
    assert second.out["value"] == {"approved": True, "findings": []}
    log = project.log("fix-issue", "212")
    assert [e["agent"] for e in log if e["kind"] == "agent" and e["attempt"] == 2] == ["reviewer"]
    [review] = [e for e in log if e["kind"] == "turn" and e["attempt"] == 2]
    assert review["harness"] == reviewer and "4be1c07 on fix/212" in review["prompt"]
    assert [r.api for r in model.conversation[6:]] == [DIALECTS[reviewer]] * 2
    assert not model.left


@pytest.mark.parametrize(
    ("page", "argv", "value"),
    [
        ("claude.md", ["plan.py", "--id", "212", "--", "#212: dates before 1970 parse as null"], PLAN),
        ("codex.md", ["review.py", "--id", "4be1c07", "--", "4be1c07"], {"approved": True, "findings": []}),
        ("gemini.md", ["triage.py", "--id", "212", "--", "#212"], {"severity": "high", "area": "dates"}),
        ("pi.md", ["review.py", "--id", "4be1c07", "--", "4be1c07"], {"approved": True, "findings": []}),
    ],
)
def test_the_pages_example_runs_on_the_real_cli(
    project: Project, model: FakeModel, page: str, argv: list[str], value: dict[str, Any]
) -> None:
    from test_docs import DOCS, examples

    point_clis_at(project, [SETUPS[page.removesuffix(".md")]], model.url)
    for kind, name, text in examples(DOCS / page):
        if kind == "file":
            (project.path / name).write_text(text)
    model.script(answer(value), Text("Done."))
    done = project.awf("run", *argv, timeout=120)

    assert done.code == 0, done.stderr
    assert done.out["value"] == value
