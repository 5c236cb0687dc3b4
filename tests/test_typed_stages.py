"""Stages whose result is a Python type: a pydantic model, a dataclass, a TypedDict, list[X], Literal.

Each runs through the real `awf run`: the stage hands back an instance of its type on the attempt
that ran it, on a continue that reuses it, and from --values; the record holds plain JSON.
"""

from __future__ import annotations

import json

from conftest import Project

TYPED = """
import dataclasses
import json
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel
from typing_extensions import TypedDict

import awf


class Finding(BaseModel):
    file: str
    line: int = 0


class Plan(BaseModel):
    branch: str
    steps: list[str]


@dataclasses.dataclass
class Built:
    commit: str
    summary: str


class Note(TypedDict):
    text: str


def seen(wf, name, value):
    with open(f"seen-{wf.attempt}.jsonl", "a") as file:
        file.write(json.dumps([name, type(value).__name__]) + "\\n")


@awf.workflow(name="typed", description="Typed stages.", present=lambda plan: f"present got {type(plan).__name__}")
async def typed(wf):
    async def make_plan():
        return Plan(branch="fix/212", steps=["parse dates before 1970"])

    plan = await wf.stage("plan", make_plan, result=Plan, summary=lambda p: f"on {p.branch}")
    seen(wf, "plan", plan)
    built = await wf.stage("build", lambda: Built("4be1c07", f"{len(plan.steps)} step"), result=Built)
    seen(wf, "build", built)
    # A work may return the plain form: the stage hands back the instance all the same.
    note = await wf.stage("note", lambda: {"text": built.commit}, result=Note)
    seen(wf, "note", note)
    findings = await wf.stage("findings", lambda: [{"file": "dates.py", "line": 7}], result=list[Finding])
    seen(wf, "findings", findings[0] if findings else None)
    verdict = await wf.stage("verdict", lambda: "approve", result=Literal["approve", "reject"])
    seen(wf, "verdict", verdict)
    if Path("stop-between").exists():
        wf.stop("a person looks first")
    await wf.stage("last", lambda: None)
    return plan
"""


def seen(project: Project, attempt: int) -> dict[str, str]:
    lines = (project.path / f"seen-{attempt}.jsonl").read_text().splitlines()
    return dict(json.loads(line) for line in lines)


INSTANCES = {"plan": "Plan", "build": "Built", "note": "dict", "findings": "Finding", "verdict": "str"}


def test_typed_stages_hand_back_instances_on_the_attempt_that_ran_them_and_on_a_continue(project: Project):
    project.write("typed.py", TYPED)
    (project.path / "stop-between").touch()
    first = project.awf("run", "typed.py", "--id", "t1")
    assert first.code == 3, first.stderr
    assert seen(project, 1) == INSTANCES
    (project.path / "stop-between").unlink()
    second = project.awf("run", "typed.py", "--id", "t1", "--continue")
    assert second.code == 0, second.stderr
    assert seen(project, 2) == INSTANCES
    assert second.stdout.strip() == "present got Plan"
    assert "↺ plan  from attempt 1 · on fix/212" in second.stderr


def test_what_present_makes_of_a_typed_value_is_printed_as_json(project: Project):
    project.write(
        "typed.py", TYPED.replace('present=lambda plan: f"present got {type(plan).__name__}"', "present=lambda p: p")
    )
    result = project.awf("run", "typed.py", "--id", "t1")
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout) == {"branch": "fix/212", "steps": ["parse dates before 1970"]}


def test_a_typed_stage_records_its_plain_json_form(project: Project):
    project.write("typed.py", TYPED)
    result = project.awf("run", "typed.py", "--id", "t1", "--json")
    assert result.code == 0, result.stderr
    assert project.stage("typed", "t1", "plan")["value"] == {"branch": "fix/212", "steps": ["parse dates before 1970"]}
    assert project.stage("typed", "t1", "plan")["summary"] == "on fix/212"
    assert project.stage("typed", "t1", "build")["value"] == {"commit": "4be1c07", "summary": "1 step"}
    assert project.stage("typed", "t1", "findings")["value"] == [{"file": "dates.py", "line": 7}]
    assert result.out["value"] == {"branch": "fix/212", "steps": ["parse dates before 1970"]}


def test_a_start_part_way_lists_each_typed_stage_it_needs_and_hands_back_instances_from_values(project: Project):
    project.write("typed.py", TYPED)
    stopped = project.awf("run", "typed.py", "--id", "t1", "--from-stage", "last")
    assert stopped.code == 3, stopped.stderr
    assert "plan: {branch: string, steps: [string]}" in stopped.stderr
    assert "build: {commit: string, summary: string}" in stopped.stderr
    assert "findings: [{file: string, line?: integer}]" in stopped.stderr
    assert 'verdict: "approve" | "reject"' in stopped.stderr
    values = {
        "plan": {"branch": "fix/9", "steps": []},
        "build": {"commit": "abc", "summary": "by hand"},
        "note": {"text": "n"},
        "findings": [{"file": "a.py"}],
        "verdict": "reject",
    }
    project.write("values.json", json.dumps(values))
    given = project.awf(
        "run", "typed.py", "--id", "t1", "--continue", "--from-stage", "last", "--values", "values.json"
    )
    assert given.code == 0, given.stderr
    assert seen(project, 2) == INSTANCES
    assert project.stage("typed", "t1", "findings")["value"] == [{"file": "a.py", "line": 0}]  # with its default


def test_values_that_do_not_fit_a_type_are_refused_naming_the_stage_and_the_field(project: Project):
    project.write("typed.py", TYPED)
    values = {
        "plan": {"branch": 3, "steps": []},
        "build": {"commit": "abc"},
        "note": {"text": "n"},
        "findings": [],
        "verdict": "maybe",
    }
    project.write("values.json", json.dumps(values))
    result = project.awf("run", "typed.py", "--id", "t1", "--from-stage", "last", "--values", "values.json")
    assert result.code == 2, result.stderr
    assert "stage plan: $.branch: 3 is not of type 'string'" in result.stderr
    assert "stage build: $: 'summary' is a required property" in result.stderr
    assert "stage verdict: $: 'maybe' is not one of ['approve', 'reject']" in result.stderr


def test_a_value_that_does_not_fit_the_type_fails_the_stage_naming_the_field(project: Project):
    project.write(
        "misfit.py",
        """
        from pydantic import BaseModel
        import awf

        class Plan(BaseModel):
            branch: str
            steps: list[str]

        @awf.workflow(name="misfit", description="A plan that is not one.")
        async def misfit(wf):
            return await wf.stage("plan", lambda: {"branch": "fix/1", "steps": "all of them"}, result=Plan)
        """,
    )
    result = project.awf("run", "misfit.py", "--id", "m1", "--json")
    assert result.code == 1, result.stderr
    assert result.out["stage"] == "plan"
    assert (
        "stage plan returned a value that does not fit its result: $.steps: Input should be a valid list"
        in (result.out["reason"])
    )
    assert project.stage("misfit", "m1", "plan")["outcome"] == "failed"
    assert "Traceback" not in result.stderr


def test_a_workflow_of_json_schema_dicts_does_not_import_pydantic(project: Project):
    project.write(
        "plain.py",
        """
        import sys
        from pathlib import Path
        import awf

        @awf.workflow(name="plain", description="Dicts only.")
        async def plain(wf):
            plan = await wf.stage("plan", lambda: {"doc": "a.md"}, result={"type": "object"})
            Path("imported").write_text(str(sorted(m for m in sys.modules if m.split(".")[0] == "pydantic")))
            return plan
        """,
    )
    for args in (["--id", "p1"], ["--id", "p1", "--continue", "--from-stage", "plan"]):
        result = project.awf("run", "plain.py", *args)
        assert result.code == 0, result.stderr
        assert (project.path / "imported").read_text() == "[]"


def test_a_type_without_pydantic_installed_says_what_to_install_in_one_line(project: Project):
    # pydantic made unimportable, as on a machine without it.
    project.write("hide/pydantic/__init__.py", "raise ImportError(\"No module named 'pydantic'\")\n")
    project.write(
        "dataclass.py",
        """
        import dataclasses
        import awf

        @dataclasses.dataclass
        class Built:
            commit: str

        @awf.workflow(name="dataclass", description="A dataclass result.")
        async def built(wf):
            return await wf.stage("build", lambda: Built("4be1c07"), result=Built)
        """,
    )
    result = project.awf("run", "dataclass.py", "--id", "d1", env={"PYTHONPATH": str(project.path / "hide")})
    assert result.code == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("awf: ")]
    assert lines == ["awf: Python types as schemas need pydantic, which is not installed: pip install 'awf[pydantic]'"]
    assert "stage build: Built is a Python type" in result.stderr
    assert "Traceback" not in result.stderr


CHANGING = """
from pathlib import Path

from pydantic import BaseModel, ConfigDict

import awf


class Plan(BaseModel):
{fields}


@awf.workflow(name="changing", description="A plan whose type changes between attempts.")
async def changing(wf):
    plan = await wf.stage("plan", lambda: {{"branch": "fix/1", "steps": ["one"]}}, result=Plan)
    Path("seen").write_text(repr(plan))
    if Path("stop-between").exists():
        wf.stop("a person looks first")
    return await wf.stage("build", lambda: "built", result={{"type": "string"}})
"""

FIRST = "    branch: str\n    steps: list[str]"


def start_changing(project: Project) -> None:
    project.write("changing.py", CHANGING.format(fields=FIRST))
    (project.path / "stop-between").touch()
    assert project.awf("run", "changing.py", "--id", "c1").code == 3
    (project.path / "stop-between").unlink()


def test_an_optional_field_added_to_a_type_keeps_its_old_records(project: Project):
    start_changing(project)
    project.write("changing.py", CHANGING.format(fields=FIRST + '\n    notes: str = "none yet"'))
    result = project.awf("run", "changing.py", "--id", "c1", "--continue")
    assert result.code == 0, result.stderr
    assert "↺ plan  from attempt 1" in result.stderr
    assert (project.path / "seen").read_text() == "Plan(branch='fix/1', steps=['one'], notes='none yet')"


def test_a_type_changed_under_its_records_stops_the_attempt_at_that_stage_naming_the_field(project: Project):
    changes = [
        (FIRST + "\n    owner: str", "$: 'owner' is a required property"),
        ("    branch: str\n    steps: list[int]", "$.steps[0]: 'one' is not of type 'integer'"),
        (
            '    model_config = ConfigDict(extra="forbid")\n    branch: str',
            "$: Additional properties are not allowed ('steps' was unexpected)",
        ),
    ]
    start_changing(project)
    for fields, problem in changes:
        project.write("changing.py", CHANGING.format(fields=fields))
        result = project.awf("run", "changing.py", "--id", "c1", "--continue", "--json")
        assert result.code == 3, result.stderr
        assert result.out["stage"] == "plan"
        assert result.out["reason"] == (
            f"the recorded value of stage plan (.awf/runs/changing/c1/stages/plan.json) no longer fits its result: "
            f"{problem}"
        )
        assert result.out["go_on"] == "awf run changing.py --id c1 --continue --from-stage plan"
    redo = project.awf("run", "changing.py", "--id", "c1", "--continue", "--from-stage", "plan")
    assert redo.code == 1, redo.stderr  # the plan's work returns what the changed type forbids
    assert "stage plan returned a value that does not fit its result: $.steps: Extra inputs" in redo.stderr
    project.write("changing.py", CHANGING.format(fields=FIRST + "\n    owner: str = 'me'"))
    redo = project.awf("run", "changing.py", "--id", "c1", "--continue", "--from-stage", "plan")
    assert redo.code == 0, redo.stderr
    assert project.stage("changing", "c1", "plan")["value"] == {"branch": "fix/1", "steps": ["one"], "owner": "me"}
