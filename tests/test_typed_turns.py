"""A turn whose schema is a Python type: the agent is shown the type's JSON Schema, its answer
comes back as an instance, and the record holds the answer as plain JSON. Real exec agents."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Project

AGENTS = Path(__file__).parent / "agents"

REVIEW = """
import sys

from pydantic import BaseModel, field_validator

import awf


class Finding(BaseModel):
    file: str
    line: int


class Verdict(BaseModel):
    approved: bool
    findings: list[Finding]

    @field_validator("findings")
    @classmethod
    def approved_has_none(cls, findings):
        if len(findings) > 3:
            raise ValueError("a review names at most three findings")
        return findings


@awf.workflow(name="review", description="A typed review.", prepare=lambda argv: {{"agent": argv}})
async def review(wf, agent):
    async def work():
        runtime = {{"harness": "exec", "command": [sys.executable, *agent]}}
        reviewer = await wf.agents.open(key="reviewer", runtime=runtime)
        turn = await reviewer.run(prompt="Review commit 4be1c07.", schema=Verdict, timeout=60)
        if not turn.outcome.answered:
            wf.stop(f"no review: {{turn.outcome.reason}}")
        verdict = turn.outcome.value
        assert isinstance(verdict, Verdict) and isinstance(verdict.findings[0], Finding), verdict
        return verdict

    verdict = await wf.stage("review", work, result=Verdict, summary=lambda v: f"{{len(v.findings)}} findings")
    return verdict.findings[0].file
"""

VERDICT = {"approved": False, "findings": [{"file": "dates.py", "line": 7}]}


def test_an_exec_agents_answer_comes_back_as_an_instance_of_the_turns_type(project: Project):
    project.write("review.py", REVIEW.format())
    for agent, by in (("answer.py", "awf answer"), ("prints.py", "the agent's output")):
        run_id = agent.removesuffix(".py")
        done = project.awf("run", "review.py", "--id", run_id, "--json", "--", str(AGENTS / agent), json.dumps(VERDICT))
        assert done.code == 0, done.stderr
        assert done.out["value"] == "dates.py"
        [turn] = [entry for entry in project.log("review", run_id) if entry["kind"] == "turn"]
        assert turn["by"] == by and turn["value"] == VERDICT  # recorded as plain JSON
        assert project.stage("review", run_id, "review")["summary"] == "1 findings"
    prompt = (project.run_dir("review", "answer") / "agents/1/reviewer/turn-1/1.prompt.txt").read_text()
    assert '"$ref": "#/$defs/Finding"' in prompt and '"approved"' in prompt  # the type's JSON Schema


def test_an_answer_the_types_validator_rejects_fails_the_turn_saying_why(project: Project):
    project.write("review.py", REVIEW.format())
    many = {"approved": False, "findings": [{"file": "a.py", "line": n} for n in range(5)]}
    done = project.awf("run", "review.py", "--id", "v", "--json", "--", str(AGENTS / "answer.py"), json.dumps(many))
    assert done.code == 3, done.stderr
    assert done.out["reason"] == (
        "no review: the recorded answer does not fit the turn: "
        "$.findings: Value error, a review names at most three findings"
    )
