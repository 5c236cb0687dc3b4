"""The rules of a stage, each enforced with a clear failure that names the stage."""

from __future__ import annotations

import json

import pytest
from conftest import Project

TEMPLATE = """
import asyncio
import awf

@awf.workflow(name="rules", description="Stage rules.")
async def rules(wf):
{body}
"""


def run_body(project: Project, body: str, *args: str):
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    project.write("rules.py", TEMPLATE.format(body=indented))
    return project.awf("run", "rules.py", "--id", "r1", "--json", *args)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('await wf.stage("Plan", lambda: None)', "stage name 'Plan' may hold only lowercase letters"),
        ('await wf.stage("a/b", lambda: None)', "stage name 'a/b'"),
        ('await wf.stage("..", lambda: None)', "stage name '..'"),
        (
            'await wf.stage("a", lambda: None)\nawait wf.stage("a", lambda: None)',
            "stage a was entered twice in one attempt",
        ),
        (
            'async def outer():\n    await wf.stage("inner", lambda: None)\nawait wf.stage("outer", outer)',
            "stage inner was entered inside stage outer: one stage at a time",
        ),
        ('await wf.stage("notify", lambda: "sent")', "stage notify has no result schema but returned a str"),
        (
            'await wf.stage("pair", lambda: (1, 2), result={"type": "array"})',
            "stage pair returned a value a later attempt could not reuse: $ is a tuple (use a list)",
        ),
        ('await wf.stage("nan", lambda: {"x": float("nan")}, result={"type": "object"})', "$.x is nan"),
        ('await wf.stage("set", lambda: {"x": {1}}, result={"type": "object"})', "$.x is a set"),
        (
            'await wf.stage("typed", lambda: {"n": "one"},\n'
            '               result={"type": "object", "properties": {"n": {"type": "integer"}}})',
            "stage typed returned a value that does not fit its result: $.n: 'one' is not of type 'integer'",
        ),
        ('await wf.stage("bad-schema", lambda: 1, result={"type": "nonsense"})', "not a valid JSON Schema"),
        ('await wf.stage("missing", lambda: 1, result="nowhere.json")', "schema file"),
        ('await wf.stage("number", lambda: 1, result=42)', "a schema is a Python type (a pydantic model, "),
        (
            'class Thing:\n    pass\nawait wf.stage("thing", lambda: Thing(), result=Thing)',
            "stage thing: the type Thing cannot be made a JSON Schema: Unable to generate pydantic-core schema",
        ),
    ],
)
def test_a_broken_rule_fails_the_attempt_naming_the_stage(project: Project, body: str, message: str):
    result = run_body(project, body)
    assert result.code == 1, result.stderr
    assert message in result.out["reason"], result.out["reason"]
    assert "Traceback" not in result.stderr


def test_a_value_that_breaks_a_rule_is_recorded_failed_so_the_next_attempt_redoes_it(project: Project):
    result = run_body(project, 'await wf.stage("pair", lambda: (1, 2), result={"type": "array"})')
    assert result.out["stage"] == "pair"
    assert project.stage("rules", "r1", "pair")["outcome"] == "failed"


def test_a_stop_caught_and_dropped_inside_a_stage_fails_it(project: Project):
    body = """
async def sneaky():
    try:
        wf.stop("no answer")
    except BaseException:
        pass
    return 1
await wf.stage("sneaky", sneaky, result={"type": "integer"})
"""
    result = run_body(project, body)
    assert result.code == 1
    assert "stop was caught: 'no answer'" in result.out["reason"]
    assert project.stage("rules", "r1", "sneaky")["outcome"] == "failed"


def test_a_stop_caught_and_dropped_between_stages_fails_the_attempt(project: Project):
    body = """
try:
    wf.stop("not yet")
except BaseException:
    pass
await wf.stage("after", lambda: None)
"""
    result = run_body(project, body)
    assert result.code == 1 and "stop was caught: 'not yet'" in result.out["reason"]
    dropped_at_end = run_body(project, 'try:\n    wf.stop("x")\nexcept BaseException:\n    pass', "--id", "r2")
    assert dropped_at_end.code == 1 and "stop was caught" in dropped_at_end.out["reason"]


def test_except_exception_cannot_swallow_a_stop(project: Project):
    body = """
async def careful():
    try:
        wf.stop("needs a person")
    except Exception:
        return "swallowed"
await wf.stage("careful", careful, result={"type": "string"})
"""
    result = run_body(project, body)
    assert result.code == 3 and result.out["reason"] == "needs a person"


def test_a_schema_file_beside_the_workflow_is_used(project: Project):
    project.write("plan.schema.json", json.dumps({"type": "object", "required": ["doc"]}))
    ok = run_body(project, 'return await wf.stage("plan", lambda: {"doc": "d"}, result="plan.schema.json")')
    assert ok.code == 0 and ok.out["value"] == {"doc": "d"}
    bad = run_body(project, 'return await wf.stage("plan", lambda: {}, result="plan.schema.json")', "--id", "r2")
    assert bad.code == 1 and "'doc'" in bad.out["reason"]


def test_sync_and_async_work_both_count_and_a_stage_without_result_returns_none(project: Project):
    body = """
first = await wf.stage("sync", lambda: 41, result={"type": "integer"})
async def add():
    return first + 1
second = await wf.stage("async", add, result={"type": "integer"})
nothing = await wf.stage("notify", lambda: None)
wf.log("logged a line", answer=second)
if wf.attempt == 1:
    wf.stop("again")
return {"sum": second, "nothing": nothing}
"""
    assert run_body(project, body).code == 3
    again = project.awf("run", "rules.py", "--id", "r1", "--continue", "--json")
    assert again.code == 0 and again.out["value"] == {"sum": 42, "nothing": None}
    assert [s["how"] for s in again.out["stages"]] == ["reused", "reused", "reused"]
    logs = [e for e in project.log("rules", "r1") if e["kind"] == "log"]
    assert logs[0]["message"] == "logged a line" and logs[0]["data"] == {"answer": 42}


def test_code_between_stages_runs_on_every_attempt(project: Project):
    body = """
await wf.stage("one", lambda: None)
open("between.txt", "a").write(f"{wf.attempt}\\n")
if wf.attempt < 3:
    wf.stop("again")
"""
    run_body(project, body)
    project.awf("run", "rules.py", "--id", "r1", "--continue")
    project.awf("run", "rules.py", "--id", "r1", "--continue")
    assert (project.path / "between.txt").read_text() == "1\n2\n3\n"
