"""A stage's own version and cache key: recorded with its value, checked by every continue."""

from __future__ import annotations

import json

import pytest
from conftest import Project

FLOW = """
import hashlib
from pathlib import Path

import awf

TEXT = {{"type": "string"}}


def prompt_key():
    return hashlib.sha256(Path("prompt.md").read_bytes()).hexdigest() if Path("prompt.md").exists() else None


def work(wf, stage):
    Path(f"ran-{{stage}}-{{wf.attempt}}").touch()
    if Path(f"stop-{{stage}}").exists():
        wf.stop(f"{{stage}} needs a person")
    return f"{{stage}} of attempt {{wf.attempt}}"


@awf.workflow(name="flow", description="Plan, review, build.", version="1.0.0")
async def flow(wf):
    await wf.stage("plan", lambda: work(wf, "plan"), result=TEXT)
    await wf.stage("review", lambda: work(wf, "review"), result=TEXT{review})
    return await wf.stage("build", lambda: work(wf, "build"), result=TEXT)
"""


def write_flow(project: Project, review: str = "") -> None:
    project.write("flow.py", FLOW.format(review=review))


def ran(project: Project, stage: str, attempt: int) -> bool:
    return (project.path / f"ran-{stage}-{attempt}").exists()


def stopped_in_build(project: Project, review: str = "") -> None:
    write_flow(project, review)
    (project.path / "stop-build").touch()
    assert project.awf("run", "flow.py", "--id", "r1").code == 3
    (project.path / "stop-build").unlink()


def plan_then_continue(project: Project):
    """--plan, then the continue: the preview must say what the continue does."""
    preview = project.awf("run", "flow.py", "--id", "r1", "--continue", "--plan", "--json")
    result = project.awf("run", "flow.py", "--id", "r1", "--continue", "--json")
    data = json.loads(preview.stdout)
    assert preview.code == (3 if data["would"] == "stop" else 0)
    return data, result


def review_record(project: Project) -> dict[str, object]:
    record: dict[str, object] = json.loads((project.run_dir("flow", "r1") / "stages" / "review.json").read_text())
    return record


def test_a_stage_version_is_recorded_with_its_value(project: Project):
    stopped_in_build(project, ', version="1", cache_key={"prompt": 3}')
    record = review_record(project)
    assert record["stage_version"] == "1" and record["cache_key"] == {"prompt": 3}
    assert "stage_version" not in json.loads((project.run_dir("flow", "r1") / "stages" / "plan.json").read_text())


def test_a_stage_version_bump_stops_at_that_stage_with_the_command_that_redoes_it(project: Project):
    stopped_in_build(project, ', version="1"')
    write_flow(project, ', version="2"')
    data, result = plan_then_continue(project)
    assert result.code == 3 and result.out["stage"] == "review"
    assert "version 1 → 2" in result.out["reason"] and "stages/review.json" in result.out["reason"]
    go_on = "awf run flow.py --id r1 --continue --from-stage review"
    assert result.out["go_on"] == go_on and go_on in result.stderr
    assert data["stop"]["stage"] == "review" and "version 1 → 2" in data["stop"]["reason"]
    assert data["go_on"] == go_on
    assert not ran(project, "review", 2)
    redo = project.awf("run", "flow.py", "--id", "r1", "--continue", "--from-stage", "review")
    assert redo.code == 0 and ran(project, "review", 3) and review_record(project)["stage_version"] == "2"


def test_a_changed_cache_key_stops_the_same_way_showing_the_key_shortened(project: Project):
    project.write("prompt.md", "Review the diff.\n")
    stopped_in_build(project, ", cache_key=prompt_key()")
    project.write("prompt.md", "Review the diff, and the tests.\n")
    data, result = plan_then_continue(project)
    assert result.code == 3 and result.out["stage"] == "review"
    reason = result.out["reason"]
    assert "cache key " in reason and "…" in reason and " → " in reason
    assert str(review_record(project)["cache_key"]) not in reason  # 64 hex digits, shown as their first few
    assert result.out["go_on"].endswith("--continue --from-stage review")
    assert data["stop"]["stage"] == "review"


def test_on_change_redo_redoes_the_stage_and_every_one_after_and_says_why(project: Project):
    stopped_in_build(project, ', version="1", on_change="redo"')
    write_flow(project, ', version="2", on_change="redo"')
    data, result = plan_then_continue(project)
    assert data["would"] == "run"
    assert data["start"]["stage"] == "review" and "version 1 → 2" in data["start"]["why"]
    assert result.code == 0
    assert [(s["stage"], s["how"]) for s in result.out["stages"]] == [
        ("plan", "reused"),
        ("review", "ran"),
        ("build", "ran"),
    ]
    assert "stage review changed since its record was made (version 1 → 2)" in result.stderr
    start = [e for e in project.log("flow", "r1") if e["kind"] == "start-point"][-1]
    assert start["stage"] == "review" and "version 1 → 2" in start["why"] and "on_change" in start["why"]
    # The record it made is of version 2: the next continue reuses it.
    again = project.awf("run", "flow.py", "--id", "r1", "--continue", "--from-stage", "build", "--plan", "--json")
    stages = json.loads(again.stdout)["stages"]
    assert again.code == 0 and [(s["stage"], s["how"]) for s in stages] == [("plan", "reused"), ("review", "reused")]


@pytest.mark.parametrize("review", [', version="1"', ', cache_key=["a", 1]', ', version="1", cache_key=["a", 1]'])
def test_an_unchanged_version_and_key_are_reused(project: Project, review: str):
    stopped_in_build(project, review)
    _, result = plan_then_continue(project)
    assert result.code == 0 and not ran(project, "review", 2) and ran(project, "build", 2)


@pytest.mark.parametrize(
    ("before", "after"),
    [("", ', version="2"'), (', version="1"', ""), ("", ', cache_key="k"'), (', cache_key="k"', "")],
)
def test_a_version_or_key_on_one_side_only_is_reused_as_before(project: Project, before: str, after: str):
    stopped_in_build(project, before)
    write_flow(project, after)
    _, result = plan_then_continue(project)
    assert result.code == 0 and not ran(project, "review", 2) and ran(project, "build", 2)


def test_a_cache_key_no_record_can_hold_fails_the_attempt_naming_the_stage(project: Project):
    write_flow(project, ", cache_key={1, 2}")
    result = project.awf("run", "flow.py", "--id", "r1")
    assert result.code == 1
    assert "stage review: its cache_key is not a JSON value a record can hold" in result.stderr


SOURCE = """
import awf


def tool(text):
    return text.upper()


def moved():
    pass


@awf.workflow(name="src", description="The digest of a tool.")
async def src(wf):
    return await wf.stage("key", lambda: awf.source_of(tool), result={"type": "string"})
"""


def test_source_of_changes_when_the_function_body_changes_and_only_then(project: Project):
    def key(source: str, run_id: str) -> str:
        project.write("src.py", source)
        result = project.awf("run", "src.py", "--id", run_id, "--json")
        assert result.code == 0, result.stderr
        value: str = result.out["value"]
        return value

    first = key(SOURCE, "a")
    assert len(first) == 16 and int(first, 16) >= 0
    assert key(SOURCE, "b") == first
    assert key(SOURCE.replace("def moved():\n    pass\n", ""), "c") == first  # moved in its file
    assert key(SOURCE.replace("text.upper()", "text.lower()"), "d") != first
