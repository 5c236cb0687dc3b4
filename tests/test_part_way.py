"""Starting part-way, redoing from a stage, and the checks when the code changes between attempts."""

from __future__ import annotations

import json
import os
import signal

import pytest
from conftest import FAKETIME, Project, finish, needs_faketime

PIPE = """
import asyncio
from pathlib import Path

import awf

PLAN = {plan_schema}
REVIEW = {{"type": "object", "required": ["rounds", "ledger"], "additionalProperties": False,
          "properties": {{"rounds": {{"type": "integer", "minimum": 1}}, "ledger": {{"type": "string"}}}}}}
BUILT = {{"type": "object", "required": ["branch"], "properties": {{"branch": {{"type": "string"}}}}}}


async def work(wf, stage, value):
    Path(f"ran-{{stage}}-{{wf.attempt}}").touch()
    if Path(f"hang-{{stage}}").exists():
        Path(f"in-{{stage}}").touch()
        await asyncio.sleep(3600)
    if Path(f"stop-{{stage}}").exists():
        wf.stop(f"{{stage}} needs a person")
    return value


@awf.workflow(name="pipe", description="Plan, review, build.", version="{version}",
              prepare=lambda argv: {{"ticket": argv[0] if argv else "T-1"}})
async def pipe(wf, ticket):
    plan = await wf.stage("{plan_name}", lambda: work(wf, "plan", {{"doc": f"docs/{{ticket}}.md"}}), result=PLAN,
                          summary=lambda p: p["doc"])
    open("between.log", "a").write(f"{{wf.attempt}} {{plan['doc']}}\\n")  # awf: ignore[write-between-stages]
    review = await wf.stage("review", lambda: work(wf, "review", {{"rounds": 1, "ledger": "ok"}}), result=REVIEW)
    await wf.stage("notify", lambda: work(wf, "notify", None))
    return await wf.stage("build", lambda: work(wf, "build", {{"branch": f"b/{{plan['doc']}}/{{review['rounds']}}"}}),
                          result=BUILT)
"""

LOOSE_PLAN = '{"type": "object", "required": ["doc"], "properties": {"doc": {"type": "string"}}}'
TIGHT_PLAN = (
    '{"type": "object", "required": ["doc", "steps"], "properties": {"doc": {"type": "string"}, '
    '"steps": {"type": "array"}}}'
)


def write_pipe(
    project: Project, *, version: str = "1.0.0", plan_schema: str = LOOSE_PLAN, plan_name: str = "plan"
) -> None:
    project.write("pipe.py", PIPE.format(version=version, plan_schema=plan_schema, plan_name=plan_name))


def ran(project: Project, stage: str, attempt: int) -> bool:
    return (project.path / f"ran-{stage}-{attempt}").exists()


def attempts(project: Project, run_id: str) -> int:
    return len([e for e in project.log("pipe", run_id) if e["kind"] == "attempt-start"])


def continue_run(project: Project, *args: str):
    return project.awf("run", "pipe.py", "--id", "r1", "--continue", "--json", *args)


def plan_then_continue(project: Project, *args: str):
    """--plan, then the continue itself: the preview must agree with what the continue does."""
    preview = project.awf("run", "pipe.py", "--id", "r1", "--continue", "--plan", "--json", *args)
    result = continue_run(project, *args)
    data = json.loads(preview.stdout)
    reused = [s["stage"] for s in data["stages"] if s["how"] in ("reused", "provided")]
    done = [s["stage"] for s in result.out["stages"] if s["how"] in ("reused", "provided")]
    assert reused == done, (data, result.out)
    if data["would"] == "stop":
        assert preview.code == 3 and result.code == 3
        if data["stop"] and data["stop"]["stage"]:
            assert result.out["stage"] == data["stop"]["stage"]
    else:
        assert preview.code == 0 and result.code != 3
        ran_now = [s["stage"] for s in result.out["stages"] if s["how"] == "ran"]
        assert data["start"] is None or ran_now[:1] == [data["start"]["stage"]]
    return data, result


# Start part-way: the Runs page's three steps.


def test_start_part_way_in_three_steps(project: Project):
    write_pipe(project)
    first = project.awf("run", "pipe.py", "--id", "r1", "--from-stage", "build", "--", "ABC-1")
    assert first.code == 3
    assert "plan: {doc: string}" in first.stderr
    assert "review: {rounds: integer ≥ 1, ledger: string}" in first.stderr
    assert "notify" not in first.stderr.split("why:")[1].split("go on:")[0]  # a stage with no result needs nothing
    go_on = "awf run pipe.py --id r1 --continue --from-stage build --values values.json"
    assert go_on in first.stderr
    # The look-ahead ran no stage's work.
    assert not any(project.path.glob("ran-*"))
    assert not (project.run_dir("pipe", "r1") / "stages").exists() or not any(
        (project.run_dir("pipe", "r1") / "stages").iterdir()
    )

    (project.path / "values.json").write_text(
        json.dumps({"plan": {"doc": "docs/hand.md"}, "review": {"rounds": 2, "ledger": "seen"}})
    )
    done = project.awf(*go_on.split()[1:], "--json")
    assert done.code == 0, done.stderr
    assert done.out["value"] == {"branch": "b/docs/hand.md/2"}
    assert [s["how"] for s in done.out["stages"]] == ["provided", "provided", "provided", "ran"]
    assert not ran(project, "plan", 2) and not ran(project, "review", 2) and ran(project, "build", 2)
    record = project.stage("pipe", "r1", "plan")
    assert record["origin"] == "provided" and record["value"] == {"doc": "docs/hand.md"}
    # A later continue reuses a provided value as any record.
    again = continue_run(project, "--from-stage", "build")
    assert again.code == 0 and [s["how"] for s in again.out["stages"]][:2] == ["reused", "reused"]


def test_json_needs_hold_each_stages_full_schema(project: Project):
    write_pipe(project)
    result = project.awf("run", "pipe.py", "--id", "r1", "--from-stage", "build", "--json")
    assert result.code == 3
    assert result.out["needs"]["plan"] == json.loads(LOOSE_PLAN)
    assert result.out["needs"]["review"]["properties"]["rounds"] == {"type": "integer", "minimum": 1}
    assert set(result.out["needs"]) == {"plan", "review"}


def test_a_new_run_at_a_stage_it_never_reaches_is_refused_and_leaves_no_folder(project: Project):
    write_pipe(project)
    result = project.awf("run", "pipe.py", "--id", "r1", "--from-stage", "biuld")
    assert result.code == 2
    assert result.stderr == (
        "awf: --from-stage biuld: no such stage; did you mean build? the workflow enters: plan, review, notify, build\n"
    )
    assert not project.run_dir("pipe", "r1").exists()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            '{"plan": {"doc": "d"}, "review": {"rounds": 2, "ledger": "x"}, "planx": 1}',
            "stage planx is not a stage before --from-stage build",
        ),
        ('{"plan": {"doc": 7}, "review": {"rounds": 0}}', "stage plan: $.doc: 7 is not of type 'string'"),
        ('{"plan": {"doc": "d"}, "review": {"rounds": 0}}', "$.rounds: 0 is less than the minimum of 1"),
        ('{"plan": {"doc": "d"}}', "stage review has no value: give review: {rounds: integer ≥ 1, ledger: string}"),
        (
            '{"plan": {"doc": "d"}, "review": {"rounds": 1, "ledger": "x"}, "notify": 1}',
            "stage notify has no result, so it needs no value",
        ),
        ("not json", "is not JSON"),
        ("[1, 2]", "must be a JSON object by stage name"),
    ],
)
def test_a_bad_values_file_is_refused_naming_every_problem_and_records_nothing(
    project: Project, values: str, message: str
):
    write_pipe(project)
    assert project.awf("run", "pipe.py", "--id", "r1", "--from-stage", "build").code == 3
    (project.path / "values.json").write_text(values)
    result = continue_run(project, "--from-stage", "build", "--values", "values.json")
    assert result.code == 2
    assert message in result.stderr, result.stderr
    assert attempts(project, "r1") == 1
    assert not (project.run_dir("pipe", "r1") / "stages").exists() or not any(
        (project.run_dir("pipe", "r1") / "stages").iterdir()
    )


def test_values_go_only_with_from_stage(project: Project):
    write_pipe(project)
    (project.path / "values.json").write_text("{}")
    result = project.awf("run", "pipe.py", "--values", "values.json")
    assert result.code == 2 and "--values goes only with --from-stage" in result.stderr
    assert not (project.path / ".awf").exists()


# Redo from a stage.


def completed_run(project: Project) -> None:
    write_pipe(project)
    assert project.awf("run", "pipe.py", "--id", "r1").code == 0


def test_from_stage_redoes_that_stage_and_every_one_after_even_on_a_completed_run(project: Project):
    completed_run(project)
    data, result = plan_then_continue(project, "--from-stage", "review")
    assert result.code == 0
    assert [(s["stage"], s["how"]) for s in result.out["stages"]] == [
        ("plan", "reused"),
        ("review", "ran"),
        ("notify", "ran"),
        ("build", "ran"),
    ]
    assert data["start"] == {"stage": "review", "why": "--from-stage"}
    # The old records stay in run.jsonl; nothing is deleted.
    reviews = [e for e in project.log("pipe", "r1") if e["kind"] == "stage" and e["stage"] == "review"]
    assert [e["attempt"] for e in reviews] == [1, 2]


def test_a_redo_that_stops_part_way_leaves_the_later_stages_to_run_again(project: Project):
    completed_run(project)
    (project.path / "stop-review").touch()
    assert continue_run(project, "--from-stage", "plan").code == 3
    (project.path / "stop-review").unlink()
    # build succeeded in attempt 1, but the redo from plan made that record stale.
    result = continue_run(project)
    assert result.code == 0
    assert [(s["stage"], s["how"]) for s in result.out["stages"]] == [
        ("plan", "reused"),
        ("review", "ran"),
        ("notify", "ran"),
        ("build", "ran"),
    ]


def test_a_mistyped_from_stage_is_refused_naming_the_near_miss_and_records_nothing(project: Project):
    completed_run(project)
    before = (project.run_dir("pipe", "r1") / "run.jsonl").read_bytes()
    for args in (("--from-stage", "buidl"), ("--from-stage", "buidl", "--plan")):
        result = project.awf("run", "pipe.py", "--id", "r1", "--continue", *args)
        assert result.code == 2, result.stderr
        assert result.stderr == (
            "awf: --from-stage buidl: no such stage; did you mean build? recorded: plan, review, notify, build\n"
        )
    far = project.awf("run", "pipe.py", "--id", "r1", "--continue", "--from-stage", "deploy")
    assert far.code == 2 and "no such stage; recorded: plan, review, notify, build" in far.stderr
    assert (project.run_dir("pipe", "r1") / "run.jsonl").read_bytes() == before
    # No attempt number was used up: the next attempt is 2.
    assert continue_run(project, "--from-stage", "build").out["attempt"] == 2


@pytest.mark.parametrize("bad", ["../x", "a/b", "Build", "..", ""])
def test_a_from_stage_that_cannot_be_a_stage_name_is_refused_before_anything(project: Project, bad: str):
    completed_run(project)
    before = (project.run_dir("pipe", "r1") / "run.jsonl").read_bytes()
    result = project.awf("run", "pipe.py", "--id", "r1", "--continue", "--from-stage", bad)
    assert result.code == 2 and f"awf: --from-stage {bad}: stage name" in result.stderr
    assert (project.run_dir("pipe", "r1") / "run.jsonl").read_bytes() == before
    fresh = project.awf("run", "pipe.py", "--id", "r2", "--from-stage", bad)
    assert fresh.code == 2 and not project.run_dir("pipe", "r2").exists()


def test_a_from_stage_the_look_ahead_cannot_see_past_is_warned_once_and_stops_if_never_reached(project: Project):
    source = PIPE.format(version="1.0.0", plan_schema=LOOSE_PLAN, plan_name="plan").replace(
        "    review = await",
        '    agent = await wf.agents.open(key="triage", runtime={"harness": "exec", "command": ["true"]})\n'
        '    await agent.run(prompt="triage")\n'
        "    review = await",
    )
    project.write("pipe.py", source)
    assert project.awf("run", "pipe.py", "--id", "r1").code == 0
    result = continue_run(project, "--from-stage", "deploy")
    assert result.code == 3
    assert result.stderr.count("this run has no record of that stage") == 1
    assert "the look-ahead cannot see whether the workflow reaches it" in result.stderr
    assert "recorded stages it never reached: none" in result.out["reason"]
    # No single stage fits: the choices are listed, and no command guesses.
    assert result.out["go_on"] is None
    assert "no single stage fits: redo from one of the stages the workflow enters (plan, review, notify, build)" in (
        result.stderr
    )


def test_an_attempt_that_ends_before_its_from_stage_goes_on_with_the_same_from_stage(project: Project):
    completed_run(project)
    write_pipe(project, version="2.0.0")  # stops at plan, before build
    result = continue_run(project, "--from-stage", "build")
    assert result.code == 3 and result.out["stage"] == "plan"
    assert result.out["go_on"].endswith("--from-stage plan")


def test_a_stop_before_reaching_from_stage_prints_it_in_the_command_that_goes_on(project: Project):
    completed_run(project)
    project.write(
        "pipe.py",
        (project.path / "pipe.py")
        .read_text()
        .replace(
            "    review = await",
            "    if Path('stop-between').exists():\n        wf.stop('not yet')\n    review = await",
        ),
    )
    (project.path / "stop-between").touch()
    result = continue_run(project, "--from-stage", "build")
    assert result.code == 3
    assert result.out["go_on"].endswith("--continue --from-stage build")


# When the code changes.


def stopped_in_build(project: Project) -> None:
    write_pipe(project)
    (project.path / "stop-build").touch()
    assert project.awf("run", "pipe.py", "--id", "r1").code == 3
    (project.path / "stop-build").unlink()


def test_a_major_version_change_stops_at_the_first_stage_recorded_by_the_other_version(project: Project):
    stopped_in_build(project)
    write_pipe(project, version="2.0.0")
    data, result = plan_then_continue(project)
    assert result.code == 3 and result.out["stage"] == "plan"
    assert "1.0.0" in result.out["reason"] and "2.0.0" in result.out["reason"]
    assert result.out["go_on"].endswith("--continue --from-stage plan")
    assert data["stop"]["stage"] == "plan"
    redo = continue_run(project, "--from-stage", "plan")
    assert redo.code == 0 and ran(project, "plan", 3)


@pytest.mark.parametrize("version", ["1.9.0", "1.0.1"])
def test_a_minor_version_or_a_reworded_prompt_redoes_nothing(project: Project, version: str):
    stopped_in_build(project)
    write_pipe(project, version=version)
    _, result = plan_then_continue(project)
    assert result.code == 0 and not ran(project, "plan", 2) and ran(project, "build", 2)


def test_under_0x_the_minor_version_counts_as_major(project: Project):
    write_pipe(project, version="0.3.0")
    (project.path / "stop-build").touch()
    assert project.awf("run", "pipe.py", "--id", "r1").code == 3
    (project.path / "stop-build").unlink()
    write_pipe(project, version="0.4.0")
    _, result = plan_then_continue(project)
    assert result.code == 3 and result.out["stage"] == "plan"


def test_a_schema_tightened_under_a_recorded_value_stops_at_that_stage_listing_the_problems(project: Project):
    stopped_in_build(project)
    write_pipe(project, plan_schema=TIGHT_PLAN)
    _, result = plan_then_continue(project)
    assert result.code == 3 and result.out["stage"] == "plan"
    assert "'steps' is a required property" in result.out["reason"]
    assert result.out["go_on"].endswith("--from-stage plan")


def test_a_stage_that_lost_its_result_stops(project: Project):
    stopped_in_build(project)
    source = (project.path / "pipe.py").read_text()
    project.write(
        "pipe.py",
        source.replace("result=REVIEW)", ')\n    review = {"rounds": 1}').replace(
            'lambda: work(wf, "review", {"rounds": 1, "ledger": "ok"})', 'lambda: work(wf, "review", None)'
        ),
    )
    _, result = plan_then_continue(project)
    assert result.code == 3 and result.out["stage"] == "review"
    assert "no longer declares a result" in result.out["reason"]


def test_a_renamed_stage_has_no_record_so_a_plain_continue_starts_there(project: Project):
    stopped_in_build(project)
    write_pipe(project, plan_name="planning")
    data, result = plan_then_continue(project)
    assert result.code == 0 and ran(project, "plan", 2)
    assert data["start"]["stage"] == "planning"


def test_after_a_rename_from_stage_of_the_old_name_is_refused_naming_the_new_names(project: Project):
    completed_run(project)
    write_pipe(project, plan_name="planning")
    before = (project.run_dir("pipe", "r1") / "run.jsonl").read_bytes()
    result = continue_run(project, "--from-stage", "plan")
    assert result.code == 2 and result.out["error"]["exit_code"] == 2
    assert result.stderr.startswith("awf: --from-stage plan: the workflow no longer enters it")
    assert "did you mean planning?" in result.stderr
    assert "the workflow enters: planning, review, notify, build" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    # Nothing recorded: the run is still the completed run it was.
    assert (project.run_dir("pipe", "r1") / "run.jsonl").read_bytes() == before
    assert project.awf("runs", "pipe/r1", "--json").out["status"] == "completed"
    # --plan says the same.
    planned = continue_run(project, "--from-stage", "plan", "--plan")
    assert planned.code == 2 and "did you mean planning?" in planned.stderr
    assert continue_run(project, "--from-stage", "planning").code == 0


def test_after_a_rename_the_refusal_names_the_new_stage_even_when_it_is_not_a_near_miss(project: Project):
    completed_run(project)
    write_pipe(project, plan_name="design")
    result = continue_run(project, "--from-stage", "plan")
    assert result.code == 2
    # design is the one stage entered with no record: where the renamed stage now stands.
    assert "did you mean design?" in result.stderr
    again = continue_run(project, "--from-stage", "design")
    assert again.code == 0 and [s["how"] for s in again.out["stages"]] == ["ran", "ran", "ran", "ran"]


def test_a_removed_stage_is_never_asked_for_and_its_record_stays(project: Project):
    stopped_in_build(project)
    source = (project.path / "pipe.py").read_text()
    project.write("pipe.py", source.replace('    await wf.stage("notify", lambda: work(wf, "notify", None))\n', ""))
    _, result = plan_then_continue(project)
    assert result.code == 0
    assert "notify" not in [s["stage"] for s in result.out["stages"]]
    # No longer current once the start point is passed, and still in the history.
    assert project.stage("pipe", "r1", "notify") is None
    assert any(e["kind"] == "stage" and e["stage"] == "notify" for e in project.log("pipe", "r1"))


# Hand edits.


def test_a_hand_edited_value_is_checked_again_and_a_broken_one_stops_naming_the_file(project: Project):
    stopped_in_build(project)
    path = project.run_dir("pipe", "r1") / "stages" / "plan.json"
    record = json.loads(path.read_text())
    record["value"] = {"doc": "docs/edited.md"}
    path.write_text(json.dumps(record, indent=2))
    fine = continue_run(project, "--from-stage", "build")
    assert fine.code == 0 and fine.out["value"]["branch"].startswith("b/docs/edited.md")

    record["value"] = {"title": "no doc"}
    path.write_text(json.dumps(record))
    _, broken = plan_then_continue(project, "--from-stage", "build")
    assert broken.code == 3 and broken.out["stage"] == "plan"
    assert "'doc' is a required property" in broken.out["reason"]


def test_a_hand_edit_that_breaks_the_json_stops_at_that_stage_naming_the_file(project: Project):
    stopped_in_build(project)
    path = project.run_dir("pipe", "r1") / "stages" / "review.json"
    path.write_text(path.read_text()[:-5])
    _, result = plan_then_continue(project)
    assert result.code == 3 and result.out["stage"] == "review"
    assert "stages/review.json" in result.out["reason"] and "is not JSON" in result.out["reason"]
    assert "Traceback" not in result.stderr


# A crash inside a --from-stage redo.


def test_a_crash_inside_the_redone_stage_leaves_the_redo_to_the_next_continue(project: Project):
    completed_run(project)
    (project.path / "hang-review").touch()
    process = project.start("run", "pipe.py", "--id", "r1", "--continue", "--from-stage", "review")
    project.wait_for(project.path / "in-review")
    os.kill(process.pid, signal.SIGKILL)
    finish(process)
    (project.path / "hang-review").unlink()
    result = continue_run(project)
    assert result.code == 0, result.stderr
    # Named once, clearly: which attempt, that this one redoes from that stage; it had no --values.
    notices = [line for line in result.stderr.splitlines() if line.startswith("!")]
    assert len(notices) == 1, result.stderr
    assert notices[0].startswith(f"! attempt 2 was interrupted in stage review: its process (pid {process.pid})")
    assert notices[0].endswith(
        "while redoing from stage review (--from-stage review); this attempt redoes from stage review again"
    )
    assert [(s["stage"], s["how"]) for s in result.out["stages"]] == [
        ("plan", "reused"),
        ("review", "ran"),
        ("notify", "ran"),
        ("build", "ran"),
    ]


def test_the_crashed_redo_does_not_carry_its_values(project: Project):
    write_pipe(project)
    assert project.awf("run", "pipe.py", "--id", "r1", "--from-stage", "review").code == 3
    (project.path / "values.json").write_text(json.dumps({"plan": {"doc": "docs/hand.md"}}))
    (project.path / "hang-review").touch()
    # The provided value for plan is recorded as the attempt enters it; remove it to act out a crash
    # that came before it was written.
    process = project.start(
        "run", "pipe.py", "--id", "r1", "--continue", "--from-stage", "review", "--values", "values.json"
    )
    project.wait_for(project.path / "in-review")
    os.kill(process.pid, signal.SIGKILL)
    finish(process)
    (project.run_dir("pipe", "r1") / "stages" / "plan.json").unlink()
    (project.path / "hang-review").unlink()
    result = continue_run(project)
    assert result.code == 3
    notices = [line for line in result.stderr.splitlines() if line.startswith("!")]
    assert len(notices) == 1 and notices[0].endswith(
        "this attempt redoes from stage review again, without that attempt's --values"
    ), result.stderr
    assert "plan: {doc: string}" in result.out["reason"]
    assert result.out["go_on"].endswith("--from-stage review --values values.json")


def test_code_between_stages_runs_on_stand_in_values_in_the_look_ahead(project: Project):
    write_pipe(project)
    project.awf("run", "pipe.py", "--id", "r1", "--from-stage", "build")
    assert (project.path / "between.log").read_text() == "1 \n"


def test_the_look_ahead_asks_no_agent_and_says_where_it_could_not_see_past(project: Project):
    source = PIPE.format(version="1.0.0", plan_schema=LOOSE_PLAN, plan_name="plan").replace(
        "    review = await",
        '    agent = await wf.agents.open(key="triage", runtime={"harness": "exec", "command": ["touch", "asked"]})\n'
        '    await agent.run(prompt="triage")\n'
        "    review = await",
    )
    project.write("pipe.py", source)
    result = project.awf("run", "pipe.py", "--id", "r1", "--from-stage", "build", "--json")
    assert result.code == 3
    assert set(result.out["needs"]) == {"plan"}
    assert "an agent is asked between stages" in result.out["reason"]
    assert not (project.path / "asked").exists()


# --plan prints the command the real attempt prints.


def go_on_line(text: str) -> str | None:
    lines = [line.split("go on:", 1)[1].strip() for line in text.splitlines() if "go on:" in line]
    return lines[-1] if lines else None


def plan_then_real(project: Project, *args: str) -> str:
    preview = project.awf("run", "pipe.py", *args, "--plan")
    real = project.awf("run", "pipe.py", *args)
    assert preview.code == real.code == 3, (preview, real)
    assert go_on_line(preview.stdout) == go_on_line(real.stderr), (preview.stdout, real.stderr)
    assert go_on_line(real.stderr)
    return go_on_line(real.stderr) or ""


def test_plan_prints_the_command_the_continue_prints_after_a_stop_between_stages(project: Project):
    write_pipe(project)
    check = "    if Path('stop-between').exists():\n        wf.stop('not yet')\n    review = await"
    project.write("pipe.py", (project.path / "pipe.py").read_text().replace("    review = await", check))
    (project.path / "stop-between").touch()
    assert project.awf("run", "pipe.py", "--id", "r1").code == 3
    # The same stop again, with no stage run: the command redoes the stage the check reads.
    assert plan_then_real(project, "--id", "r1", "--continue").endswith("--continue --from-stage plan")
    # Given a --from-stage it never reaches, it is the same check again: both say to redo plan.
    assert plan_then_real(project, "--id", "r1", "--continue", "--from-stage", "build").endswith("--from-stage plan")
    # After an attempt that ran a stage, the check stops the redo on its way: the command keeps --from-stage.
    (project.path / "stop-between").unlink()
    (project.path / "stop-build").touch()
    assert project.awf("run", "pipe.py", "--id", "r1", "--continue").code == 3
    (project.path / "stop-build").unlink()
    (project.path / "stop-between").touch()
    go_on = plan_then_real(project, "--id", "r1", "--continue", "--from-stage", "build")
    assert go_on.endswith("--continue --from-stage build")


def test_plan_prints_the_command_the_continue_prints_after_a_major_version_change(project: Project):
    stopped_in_build(project)
    write_pipe(project, version="2.0.0")
    assert plan_then_real(project, "--id", "r1", "--continue").endswith("--continue --from-stage plan")


def test_plan_prints_the_command_the_continue_prints_when_a_value_no_longer_fits(project: Project):
    stopped_in_build(project)
    write_pipe(project, plan_schema=TIGHT_PLAN)
    assert plan_then_real(project, "--id", "r1", "--continue").endswith("--continue --from-stage plan")


def test_plan_refuses_a_from_stage_of_a_renamed_stage_as_the_continue_does(project: Project):
    completed_run(project)
    write_pipe(project, plan_name="design")
    args = ("--id", "r1", "--continue", "--from-stage", "plan")
    preview, real = project.awf("run", "pipe.py", *args, "--plan"), project.awf("run", "pipe.py", *args)
    assert preview.code == real.code == 2
    assert preview.stderr == real.stderr and "did you mean design?" in real.stderr


def test_plan_prints_the_command_a_start_part_way_prints(project: Project):
    write_pipe(project)
    go_on = plan_then_real(project, "--id", "r1", "--from-stage", "build")
    assert go_on == "awf run pipe.py --id r1 --continue --from-stage build --values values.json"
    (project.path / "values.json").write_text(json.dumps({"plan": {"doc": "d"}}))
    # A values file that leaves one out: both refuse alike, and neither records anything.
    args = ("--id", "r1", "--continue", "--from-stage", "build", "--values", "values.json")
    preview, real = project.awf("run", "pipe.py", *args, "--plan"), project.awf("run", "pipe.py", *args)
    assert preview.code == real.code == 2 and preview.stderr == real.stderr
    assert attempts(project, "r1") == 1


def test_following_the_start_part_way_steps_exactly_prints_no_warning(project: Project):
    write_pipe(project)
    first = project.awf("run", "pipe.py", "--id", "r1", "--from-stage", "build")
    go_on = go_on_line(first.stderr)
    assert go_on == "awf run pipe.py --id r1 --continue --from-stage build --values values.json"
    (project.path / "values.json").write_text(
        json.dumps({"plan": {"doc": "docs/hand.md"}, "review": {"rounds": 2, "ledger": "seen"}})
    )
    done = project.awf(*go_on.split()[1:])
    assert done.code == 0, done.stderr
    for result in (first, done):
        assert not [line for line in result.stderr.splitlines() if line.startswith("!")], result.stderr


@needs_faketime
def test_stages_are_listed_in_the_order_the_run_recorded_them_even_when_they_end_in_one_millisecond(project: Project):
    """A stopped clock: every stage ends at the same instant, so only run.jsonl can order them."""
    frozen = {"LD_PRELOAD": str(FAKETIME), "FAKETIME": "2026-06-01 12:00:00", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    write_pipe(project)
    assert project.awf("run", "pipe.py", "--id", "r1", env=frozen).code == 0
    order = ["plan", "review", "notify", "build"]
    for redo in (None, "review"):
        if redo is not None:  # a redo of the middle: its stages are recorded again, in the same order
            again = project.awf("run", "pipe.py", "--id", "r1", "--continue", "--from-stage", redo, env=frozen)
            assert again.code == 0, again.stderr
        refused = project.awf("run", "pipe.py", "--id", "r1", "--continue", "--from-stage", "buidl", env=frozen)
        assert refused.stderr.endswith(f"recorded: {', '.join(order)}\n")
        completed = project.awf("run", "pipe.py", "--id", "r1", "--continue", env=frozen)
        listed = [
            line.split()[0] for line in completed.stderr.splitlines() if line.startswith("  ") and "e.g." not in line
        ]
        assert listed == order, completed.stderr
        runs = project.awf("runs", "pipe/r1", "--json", env=frozen)
        assert [s["stage"] for s in json.loads(runs.stdout)["stages"]] == order, runs.stdout
        preview = project.awf("run", "pipe.py", "--id", "r1", "--continue", "--from-stage", "build", "--plan", "--json")
        assert [s["stage"] for s in json.loads(preview.stdout)["stages"]] == order[:3], preview.stdout
