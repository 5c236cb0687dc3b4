"""Records edited by hand with jq: what a continue and `awf runs` show of them, and what they complain of."""

from __future__ import annotations

import json
import subprocess

from conftest import Project
from reading_runs import run, write_steps

from awf.record.schemas import validator


def jq(project: Project, path, program: str) -> None:
    """Edit a record file as a person does: jq into a temp file, then move it over the old one."""
    done = subprocess.run(["jq", program, str(path)], capture_output=True, text=True, check=True)
    path.with_suffix(".tmp").write_text(done.stdout)
    path.with_suffix(".tmp").replace(path)


def test_a_hand_edited_value_shows_as_it_is_now_in_the_continue_and_in_awf_runs(project: Project):
    write_steps(project)
    assert run(project, "e1", "stop").code == 3
    plan = project.run_dir("steps", "e1") / "stages" / "plan.json"
    jq(project, plan, '.value.doc = "docs/EDITED.md"')

    before = project.awf("runs", "steps/e1", "--json")
    assert before.code == 0
    validator("runs")(before.out)
    assert before.out["stages"][0]["edited"] is True and "edited" not in before.out["stages"][1]
    assert "succeeded, edited" in project.awf("runs", "steps/e1").stdout

    again = project.awf("run", "steps.py", "--id", "e1", "--continue", "--json")
    assert again.code == 3
    assert "↺ plan  from attempt 1 · docs/EDITED.md" in again.stderr
    assert "docs/e1.md" not in again.stderr
    assert "totals:  2 stages (1 ran, 1 reused)" in again.stderr
    stages = {item["stage"]: item for item in again.out["stages"]}
    assert stages["plan"]["how"] == "reused" and stages["plan"]["summary"] == "docs/EDITED.md"
    assert json.loads((project.run_dir("steps", "e1") / "out.json").read_text()) == again.out

    shown = project.awf("runs", "steps/e1")
    plan_row = next(line for line in shown.stdout.splitlines() if line.strip().startswith("plan"))
    assert "succeeded, edited" in plan_row and "docs/EDITED.md" in plan_row
    assert "docs/EDITED.md" in project.awf("watch", "steps/e1").stderr


def test_a_value_that_no_longer_fits_names_its_file(project: Project):
    write_steps(project)
    assert run(project, "e2", "stop").code == 3
    jq(project, project.run_dir("steps", "e2") / "stages" / "plan.json", ".value.doc = 7")
    again = project.awf("run", "steps.py", "--id", "e2", "--continue")
    assert again.code == 3
    assert "the recorded value of stage plan (.awf/runs/steps/e2/stages/plan.json) no longer fits" in again.stderr


def test_a_stopped_stage_says_it_declares_a_result_and_marked_succeeded_by_hand_it_is_reused(project: Project):
    write_steps(project)
    assert run(project, "e3", "stop").code == 3
    build = project.run_dir("steps", "e3") / "stages" / "build.json"
    record = json.loads(build.read_text())
    assert record["outcome"] == "stopped" and record["has_result"] is True
    failed = project.run_dir("steps", "e4") / "stages" / "build.json"
    assert run(project, "e4", "fail").code == 1
    assert json.loads(failed.read_text())["has_result"] is True

    # The docs' way to mark a stage done by hand.
    jq(project, build, '.outcome = "succeeded" | .value = {"branch": "fix/by-hand"}')
    again = project.awf("run", "steps.py", "--id", "e3", "--continue", "--json")
    assert again.code == 0, again.stderr
    assert "↺ build  from attempt 1 · fix/by-hand" in again.stderr
    assert again.out["value"] == "approved fix/by-hand"
    assert [item["how"] for item in again.out["stages"]] == ["reused", "reused", "ran"]
