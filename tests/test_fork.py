"""`awf fork`: a new run that starts with another run's records, which stays as it was."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import Project, finish
from reading_runs import release, run, start_waiting, write_steps


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `folder`: its bytes and its modification time."""
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            files[str(path.relative_to(folder))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return files


def test_a_fork_redoes_only_from_the_stage_named_and_leaves_the_source_as_it_was(project: Project):
    write_steps(project)
    assert run(project, "f1", "complete").code == 0
    source = project.run_dir("steps", "f1")
    before = snapshot(source)

    forked = project.awf("fork", "steps/f1", "--from-stage", "build")
    assert forked.code == 0, forked.stderr
    assert forked.stdout == "steps/f1-fork-1\n"
    assert "copied the records of plan" in forked.stderr
    assert "go on: awf run steps.py --id f1-fork-1 --continue" in forked.stderr
    plan = project.stage("steps", "f1-fork-1", "plan")
    assert plan is not None and plan["value"] == {"doc": "docs/f1.md"}
    assert plan["forked_from"] == {"run": "steps/f1", "attempt": 1}
    assert project.stage("steps", "f1-fork-1", "build") is None
    [line] = [line for line in project.log("steps", "f1-fork-1") if line["kind"] == "run"]
    assert line["forked_from"] == {"run": "steps/f1", "stage": "build"} and line["argv"] == ["complete"]

    again = project.awf("run", "steps.py", "--id", "f1-fork-1", "--continue", "--json")
    assert again.code == 0, again.stderr
    assert [(s["stage"], s["how"]) for s in again.out["stages"]] == [
        ("plan", "reused"),
        ("build", "ran"),
        ("review", "ran"),
    ]
    assert "↺ plan  from steps/f1 attempt 1 · docs/f1.md" in again.stderr
    assert project.stage("steps", "f1-fork-1", "build")["value"] == {"branch": "fix/f1-fork-1"}
    assert snapshot(source) == before
    assert not (project.path / ".awf" / "runs" / "steps" / "f1-fork-1" / "stages" / "plan.json~").exists()


def test_a_fork_says_where_it_came_from_in_awf_runs_and_awf_logs(project: Project):
    write_steps(project)
    assert run(project, "f2", "complete").code == 0
    assert project.awf("fork", "steps/f2", "--from-stage", "review", "--id", "f2-other").code == 0
    assert project.awf("fork", "steps/f2").stdout == "steps/f2-fork-1\n"

    listing = project.awf("runs").stdout
    assert "forked from steps/f2@review" in listing
    assert "forked from steps/f2 " in listing or listing.rstrip().endswith("forked from steps/f2")
    one = project.awf("runs", "steps/f2-other")
    assert "  forked:   from steps/f2@review" in one.stdout
    assert project.awf("runs", "steps/f2-other", "--json").out["forked_from"] == {"run": "steps/f2", "stage": "review"}
    logs = project.awf("logs", "steps/f2-other").stdout
    assert "forked from steps/f2@review" in logs
    assert "↺ build  copied from steps/f2, as its attempt 1 recorded it" in logs
    # A fork with no stage named copies every succeeded record: its continue reuses all three.
    done = project.awf("run", "steps.py", "--id", "f2-fork-1", "--continue", "--json")
    assert done.code == 0 and [s["how"] for s in done.out["stages"]] == ["reused"] * 3


def test_a_fork_that_cannot_be_made_is_refused_and_makes_nothing(project: Project):
    write_steps(project)
    assert run(project, "f3", "complete").code == 0
    workflow = project.path / ".awf" / "runs" / "steps"
    before = sorted(os.listdir(workflow))

    missing = project.awf("fork", "steps/nope")
    assert missing.code == 1 and missing.stderr.startswith("awf: there is no run steps/nope")
    for args, said in [
        (["--from-stage", "deploy"], "has no record of stage deploy to fork from; its recorded stages: plan, build"),
        (["--from-stage", "Build"], "--from-stage Build: stage name 'Build'"),
        (["--id", "f3"], "run steps/f3 exists"),
        (["--id", "a/b"], "--id a/b:"),
    ]:
        refused = project.awf("fork", "steps/f3", *args)
        assert refused.code == 2, (args, refused.stderr)
        assert refused.stderr.startswith("awf: ") and said in refused.stderr, refused.stderr
        assert refused.stdout == ""
    values = project.awf("fork", "steps/f3", "--values", "values.json")
    assert values.code == 2 and "--values goes only with --from-stage" in values.stderr
    assert sorted(os.listdir(workflow)) == before


def test_fork_with_run_makes_the_fork_and_its_first_attempt_and_exits_with_its_code(project: Project):
    write_steps(project)
    assert run(project, "f4", "stop").code == 3
    # The fork keeps the source's arguments: its build stops again, as the source's did.
    stopped = project.awf("fork", "steps/f4", "--run", "steps.py")
    assert stopped.code == 3, stopped.stderr
    assert "forked steps/f4 as steps/f4-fork-1: copied the records of plan" in stopped.stderr
    assert "stopped in build" in stopped.stderr

    assert run(project, "f5", "complete").code == 0
    done = project.awf("fork", "steps/f5", "--from-stage", "review", "--run", "steps.py")
    assert done.code == 0, done.stderr
    assert project.stage("steps", "f5-fork-1", "review")["value"] == "approved fix/f5"
    assert project.stage("steps", "f5-fork-1", "review")["attempt"] == 1
    assert "forked_from" not in project.stage("steps", "f5-fork-1", "review")


def test_a_fork_of_a_run_with_a_live_attempt_copies_what_is_recorded(project: Project):
    write_steps(project)
    live = start_waiting(project, "f6")
    try:
        forked = project.awf("fork", "steps/f6")
        assert forked.code == 0, forked.stderr
        assert "copied the records of plan" in forked.stderr
        assert sorted(p.name for p in (project.run_dir("steps", "f6-fork-1") / "stages").iterdir()) == ["plan.json"]
    finally:
        release(project, "f6")
        assert finish(live).code == 0
