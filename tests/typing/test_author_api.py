"""What a type checker sees of the author API: `mypy --strict` checks this file in CI.

Each `assert_type` is checked by mypy, and is a no-op when the file runs; the test at the end
runs the same workflows through awf.testing, so the types mypy sees are the ones awf hands back.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal, assert_type

from pydantic import BaseModel
from typing_extensions import TypedDict

import awf
from awf.agents import Turn
from awf.testing import Run, answer, run_workflow


class Plan(BaseModel):
    branch: str
    steps: list[str]


@dataclasses.dataclass
class Built:
    commit: str


class Note(TypedDict):
    text: str


STEPS_SCHEMA = {"type": "array", "items": {"type": "string"}}


def built_line(built: Built) -> str:
    return built.commit


@awf.workflow(name="typed", description="Every way to give a stage its result.", present=lambda p: p.branch)
async def typed(wf: awf.Context) -> Plan:
    async def make_plan() -> Plan:
        planner = await wf.agents.open(key="planner", runtime="claude")
        turn = await planner.run(prompt="Plan it.", schema=Plan)
        assert_type(turn, Turn[Plan])
        assert_type(turn.outcome.value, Plan | None)
        if not turn.outcome.answered:
            wf.stop(f"no plan: {turn.outcome.reason}")
        assert_type(turn.outcome.value, Plan)
        return turn.outcome.value

    plan = await wf.stage("plan", make_plan, result=Plan, summary=lambda p: p.branch)
    assert_type(plan, Plan)
    if TYPE_CHECKING:  # summary takes the stage's type: another is an error (else this ignore is unused)
        await wf.stage("wrong", make_plan, result=Plan, summary=built_line)  # type: ignore[arg-type]

    built = await wf.stage("build", lambda: Built(commit="4be1c07"), result=Built, summary=lambda b: b.commit)
    assert_type(built, Built)
    # A stage's version and cache key change nothing of its type.
    again = await wf.stage(
        "again", lambda: Built(commit="4be1c07"), result=Built, version="2", cache_key=awf.source_of(built_line)
    )
    assert_type(again, Built)
    assert_type(awf.source_of(built_line), str)
    keyed = await wf.stage("keyed", lambda: 3, result={"type": "integer"}, cache_key={"n": 1}, on_change="redo")
    assert_type(keyed, int)
    if TYPE_CHECKING:  # on_change is "stop" or "redo" (else this ignore is unused)
        await wf.stage("odd", lambda: 3, result={"type": "integer"}, on_change="skip")  # type: ignore[call-overload]
    # A fresh stage runs on every attempt; its value's type is as any stage's.
    still = await wf.stage("still-open", lambda: Built(commit="4be1c07"), result=Built, fresh=True)
    assert_type(still, Built)
    if TYPE_CHECKING:  # fresh is a bool (else this ignore is unused)
        await wf.stage("odd-fresh", lambda: 3, result={"type": "integer"}, fresh="yes")  # type: ignore[call-overload]

    async def write_note() -> Note:
        return {"text": plan.branch}

    note = await wf.stage("note", write_note, result=Note)
    assert_type(note, Note)

    async def list_steps() -> list[str]:
        return plan.steps

    # With a JSON Schema, the stage's value has the type its work returns.
    steps = await wf.stage("steps", list_steps, result=STEPS_SCHEMA, summary=lambda s: len(s))
    assert_type(steps, list[str])
    count = await wf.stage("count", lambda: len(plan.steps), result={"type": "integer"})
    assert_type(count, int)

    # A type form that is not a class (list[X], Literal[...]) hands back what pydantic makes of it.
    verdict = await wf.stage("verdict", lambda: "approve", result=Literal["approve", "reject"])
    assert_type(verdict, Any)

    async def notify() -> None:
        wf.log(f"{plan.branch} at {built.commit}: {note['text']}, {steps}, {count}, {verdict}")

    await wf.stage("notify", notify)

    text_turn = await (await wf.agents.open(key="writer", runtime="claude")).run(prompt="Say hello.")
    assert_type(text_turn, Turn[str])
    return plan


def test_a_typed_workflow_hands_back_the_types_a_checker_sees() -> None:
    run = run_workflow(
        typed,
        agents={
            "planner": answer(Plan, Plan(branch="fix/212", steps=["parse dates before 1970"])),
            "writer": answer("hello"),
        },
    )
    assert_type(run, Run[Plan])
    assert_type(run.value, Plan)
    assert run.value == Plan(branch="fix/212", steps=["parse dates before 1970"])
    assert run.stage("build").value == {"commit": "4be1c07"}  # the record holds plain JSON


class Finding(BaseModel):
    lens: str
    problems: list[str]


@awf.workflow(name="reviewed", description="A reviewer per lens, each branch recorded.")
async def reviewed(wf: awf.Context) -> list[Finding]:
    async def review(lens: str) -> Finding:
        reviewer = await wf.agents.open(key=f"review:{lens}", runtime="claude")
        turn = await reviewer.run(prompt=f"Review with the {lens} lens.", schema=Finding)
        if not turn.outcome.answered:
            wf.stop(f"no review: {turn.outcome.reason}")
        return turn.outcome.value

    findings = await wf.each(
        "review", ["security", "style"], review, result=Finding, key=lambda lens: lens, summary=lambda f: f.lens
    )
    assert_type(findings, list[Finding])
    lengths = await wf.parallel(findings, lambda finding: len(finding.problems), label="count")
    assert_type(lengths, list[int])
    return findings


def test_a_fan_out_hands_back_a_list_of_its_type_and_a_test_scripts_its_branches() -> None:
    style = Finding(lens="style", problems=[])
    run = run_workflow(
        reviewed,
        earlier={"stages": {"review@style": style}},  # what an earlier attempt recorded of one branch
        agents={"review:security": answer(Finding, Finding(lens="security", problems=["an open port"]))},
    )
    assert_type(run.value, list[Finding])
    assert run.value == [Finding(lens="security", problems=["an open port"]), style]
    assert [(stage.name, stage.how) for stage in run.stages] == [
        ("review@style", "reused"),
        ("review@security", "ran"),
        ("review", "ran"),
    ]
    assert [agent.key for agent in run.agents] == ["review:security"]  # a reused branch opens no agent


@awf.workflow(name="retrying", description="Stops worth retrying, in both forms.", version="1.0.0")
async def retrying(wf: awf.Context) -> str:
    async def check() -> str:
        if wf.attempt == 1:
            raise awf.Retry("the registry is down", after=30, retries=3)
        if wf.attempt == 2:
            wf.stop("the registry is still down", retry_after=60.0, retries=3)
        return "up"

    def given_wrong() -> None:  # a retry's delay is a number of seconds (else these ignores are unused)
        awf.Retry("down", after="soon")  # type: ignore[arg-type]
        wf.stop("down", retry_after="soon")  # type: ignore[arg-type]

    return await wf.stage("registry", check, result={"type": "string"})


def test_a_retry_is_typed_and_its_ending_says_when() -> None:
    run = run_workflow(retrying)
    assert run.ending.outcome == "stopped" and run.ending.retry is not None
    assert_type(run.ending.retry["at"], str)
    assert (run.ending.retry["number"], run.ending.retry["of"], run.ending.retry["after"]) == (1, 3, 30)
