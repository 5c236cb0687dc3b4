"""`--plan` on a run with events names the waits it would pass and where it would park; `awf runs
W/ID` marks the records a redo left stale."""

from __future__ import annotations

import json

from conftest import Project
from test_events import MERGE, completed, wait_attempt_end

from awf.record.redo import stale_stages


def merge(project: Project) -> Project:
    project.write("merge.py", MERGE.replace("{remind}", "1h"))
    return project


def plan(project: Project, *args: str) -> tuple[str, dict]:
    text = project.awf("run", "merge.py", "--id", "m1", "--continue", *args, "--plan")
    data = project.awf("run", "merge.py", "--id", "m1", "--continue", *args, "--plan", "--json")
    assert text.code == 0 and data.code == 0, text.stderr + data.stderr
    return text.stdout, data.out


def test_plan_of_a_parked_run_names_the_wait_it_parks_at_and_the_events_already_in_the_inbox(project: Project):
    merge(project).awf("run", "merge.py", "--id", "m1")
    text, data = plan(project)
    assert "◆ waits for ci after open (-/receive:ci#1): nothing for it in the inbox: the attempt parks here" in text
    assert text.splitlines()[-2] == "would park (exit 0), waiting for ci"
    assert data["would"] == "park" and data["park"][0]["names"] == ["ci"]

    project.awf("send", "merge/m1", "ci", "--data", '{"passed": true}', "--event-id", "ci-1", "--no-wake")
    text, data = plan(project)
    lines = [line.strip() for line in text.splitlines()]
    assert (
        lines[1].startswith("↺ open")
        and lines[2] == "⧖ waits for ci after open (-/receive:ci#1): ci-1 is in the inbox: it takes it"
    )
    assert lines[3].startswith("▸ check  start point (no record); it runs")
    assert lines[4].startswith("◆ waits for approved or ") and "after check" in lines[4]
    assert [(w["after"], w["how"], w["event"]) for w in data["waits"]] == [
        ("open", "queued", "ci-1"),
        ("check", "parks", None),
    ]
    # What the plan said is what the continue does, and it recorded nothing.
    assert [e["kind"] for e in project.log("merge", "m1")].count("take") == 0
    real = project.awf("run", "merge.py", "--id", "m1", "--continue", "--json")
    assert real.out["outcome"] == "parked" and real.out["waits"][0]["names"] == ["approved"]


def test_plan_of_a_redo_replays_the_takes_and_races_before_and_after_its_stage(project: Project):
    completed(merge(project))
    text, data = plan(project, "--from-stage", "check")
    lines = [line.strip() for line in text.splitlines()]
    assert "it and every stage after it run" not in text
    assert lines[2].startswith("⧖ waits for ci after open (-/receive:ci#1): takes ") and lines[2].endswith(
        "again, as an earlier attempt did"
    )
    assert lines[3].startswith("▸ check  start point (--from-stage); it runs")
    assert lines[4].startswith("⧖ waits for approved after check (-/race:approved,remind#1): takes ")
    assert lines[5] == "▸ merge  runs (its record is older than the redo from check in attempt 3)"
    assert lines[6] == "✓ the workflow returns" and lines[7] == "would run"
    assert data["would"] == "run" and [s["stage"] for s in data["after_start"]] == ["merge"]

    # From open, the CI event taken before the redo is not taken again: the plan says it parks there.
    text, data = plan(project, "--from-stage", "open")
    assert "◆ waits for ci after open (-/receive:ci#1): nothing for it in the inbox: the attempt parks here" in text
    assert data["would"] == "park"


def test_runs_marks_the_records_a_redo_left_stale_until_they_run_again(project: Project):
    completed(merge(project))
    assert project.awf("run", "merge.py", "--id", "m1", "--continue", "--from-stage", "open").code == 0  # parks on ci
    shown = project.awf("runs", "merge/m1").stdout
    rows = {line.split()[0]: line for line in shown.splitlines() if line.startswith("  ") and len(line.split()) > 2}
    assert "succeeded, stale" in rows["check"] and "succeeded, stale" in rows["merge"]
    assert "stale" not in rows["open"]
    assert (
        "stale (older than the redo from open in attempt 3; each runs again when the workflow reaches it): check, merge"
        in shown
    )
    stages = {s["stage"]: s for s in json.loads(project.awf("runs", "merge/m1", "--json").stdout)["stages"]}
    assert stages["check"]["stale"] == "older than the redo from open in attempt 3" and "stale" not in stages["open"]

    project.awf("send", "merge/m1", "ci", "--data", '{"passed": true}')
    assert wait_attempt_end(project, 4)["outcome"] == "completed"
    assert "stale" not in project.awf("runs", "merge/m1").stdout


def test_before_a_redo_reaches_its_stage_that_stage_and_those_entered_after_it_are_stale():
    records = {name: {"outcome": "succeeded", "attempt": 1} for name in ("open", "check", "merge")}
    entries = [
        *({"kind": "stage-start", "attempt": 1, "stage": name} for name in ("open", "check", "merge")),
        {"kind": "redo", "attempt": 2, "stage": "check"},
        {"kind": "stage-reused", "attempt": 2, "stage": "open"},
    ]
    assert list(stale_stages(entries, records)) == ["check", "merge"]
    reached = {"kind": "redo-reached", "attempt": 3, "stage": "check", "redo_attempt": 2, "before_stages": ["open"]}
    assert list(stale_stages([*entries, reached], records)) == ["check", "merge"]
    assert stale_stages(entries[:3], records) == {}
