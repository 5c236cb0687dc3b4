"""Fan-outs through the real CLI: wf.each's branches recorded, reused and redone alone; wf.parallel.

Each count is the work's own side effect (a file a branch writes as it runs), never a time.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from conftest import Project, finish

# A branch's work: notes it ran (calls/{item}.{attempt}), asks an exec agent of its own, and fails
# when the agent says so. The agent fails the items listed in the file `failing`.
REVIEW = """
    import json, sys
    from pathlib import Path

    import awf

    AGENT = [sys.executable, str(Path(__file__).parent / "agent.py")]


    @awf.workflow(name="review", description="A reviewer per lens, then a summary.")
    async def review(wf: awf.Context) -> list[str]:
        lenses = json.loads(Path("lenses.json").read_text())

        async def one(lens: str) -> str:
            Path("calls").mkdir(exist_ok=True)
            Path("calls", f"{lens}.{wf.attempt}").write_text(wf.stage_name or "")
            agent = await wf.agents.open(key=f"review:{lens}", runtime={"harness": "exec", "command": [*AGENT, lens]})
            turn = await agent.run(prompt=f"Review with the {lens} lens.", schema={"type": "object"})
            if not turn.outcome.answered or not turn.outcome.value["ok"]:
                raise RuntimeError(f"the {lens} reviewer found a problem")
            return turn.outcome.value["finding"]

        found = await wf.each("review", lenses, one, result=str, key=lambda lens: lens, concurrency=2)
        Path("calls").mkdir(exist_ok=True)
        Path("calls", f"summary.{wf.attempt}").write_text("")
        await wf.stage("summary", lambda: " ".join(found), result=str)
        return found
"""

AGENT = """
    import json, sys
    from pathlib import Path

    lens = sys.argv[1]
    failing = Path("failing").read_text().split() if Path("failing").exists() else []
    print(json.dumps({"ok": lens not in failing, "finding": lens.upper()}))
"""

LENSES = ["a", "b", "c", "d", "e", "f"]


def review_project(project: Project, lenses: list[str] = LENSES, failing: str = "") -> Path:
    project.write("agent.py", AGENT)
    project.write("lenses.json", json.dumps(lenses))
    project.write("failing", failing)
    return project.write("review.py", REVIEW)


def calls(project: Project, attempt: int) -> list[str]:
    return sorted(path.stem for path in (project.path / "calls").glob(f"*.{attempt}"))


def test_two_of_six_fail_the_others_are_recorded_and_the_continue_runs_only_those_two(project: Project) -> None:
    workflow = review_project(project, failing="b e")
    first = project.awf("run", str(workflow), "--id", "r")
    assert first.code == 1, first.stderr
    assert calls(project, 1) == LENSES  # every branch ran, the failures let the others finish
    assert "2 of 6 branches failed, 4 succeeded" in first.stderr
    assert "go on:   awf run" in first.stderr and "--continue" in first.stderr
    for lens in "acdf":
        record = project.stage("review", "r", f"review@{lens}")
        assert record is not None and record["outcome"] == "succeeded" and record["branch_of"] == "review"
    assert project.stage("review", "r", "review@b")["outcome"] == "failed"  # type: ignore[index]
    assert project.stage("review", "r", "review") is None  # the fan-out is recorded once every branch succeeded

    (project.path / "failing").write_text("")
    second = project.awf("run", str(workflow), "--id", "r", "--continue", "--json")
    assert second.code == 0, second.stderr
    assert calls(project, 2) == ["b", "e", "summary"]
    assert second.out["value"] == ["A", "B", "C", "D", "E", "F"]
    fan_out = project.stage("review", "r", "review")
    assert fan_out is not None and fan_out["value"] == second.out["value"] and fan_out["branches"] == LENSES
    # Each branch's agent had a key of its own, and was ended with its branch.
    agents = {entry["agent"] for entry in project.log("review", "r") if entry["kind"] == "turn"}
    assert agents == {f"review:{lens}" for lens in LENSES}


def test_six_branches_at_concurrency_two_never_run_more_than_two_at_once(project: Project) -> None:
    project.write(
        "wide.py",
        """
        import asyncio
        from pathlib import Path

        import awf

        RUNNING: set[str] = set()


        @awf.workflow(name="wide", description="Six branches, two at a time.")
        async def wide(wf: awf.Context) -> list[int]:
            async def one(item: str) -> int:
                RUNNING.add(item)
                seen = len(RUNNING)
                with open("seen", "a") as out:
                    out.write(f"{item} {seen}\\n")
                for _ in range(5):  # let every other branch that may run get to this point
                    await asyncio.sleep(0)
                RUNNING.discard(item)
                return seen

            return await wf.each("wide", list("abcdef"), one, result=int, key=str, concurrency=2)
        """,
    )
    done = project.awf("run", "wide.py", "--id", "w", "--json")
    assert done.code == 0, done.stderr
    seen = [int(line.split()[1]) for line in (project.path / "seen").read_text().splitlines()]
    assert len(seen) == 6 and max(seen) == 2  # side by side, and never more than two
    # The plain-lines progress shows the group and a line per branch.
    lines = done.stderr.splitlines()
    assert "⇉ wide  6 branches, 2 at a time" in lines
    assert [line.split()[1] for line in lines if line.startswith("▸ wide@")] == [f"wide@{x}" for x in "abcdef"]
    assert sum(line.startswith("✓ wide@") for line in lines) == 6
    assert "⇇ wide  6 of 6 branches succeeded" in lines


KILLED = """
    import asyncio
    from pathlib import Path

    import awf


    @awf.workflow(name="killed", description="Two branches end, two wait for a file.")
    async def killed(wf: awf.Context) -> list[str]:
        async def one(item: str) -> str:
            Path("calls").mkdir(exist_ok=True)
            Path("calls", f"{item}.{wf.attempt}").write_text("")
            if item in ("c", "d"):
                while not Path("go").exists():
                    await asyncio.sleep(0.01)
            return item

        return await wf.each("part", ["a", "b", "c", "d"], one, result=str, key=str)
"""


def test_a_kill_9_mid_fan_out_leaves_the_ended_branches_and_the_continue_runs_only_the_others(
    project: Project,
) -> None:
    project.write("killed.py", KILLED)
    process = project.start("run", "killed.py", "--id", "k")
    stages = project.run_dir("killed", "k") / "stages"
    project.wait_for(stages / "part@a.json")
    project.wait_for(stages / "part@b.json")
    project.wait_for(project.path / "calls" / "d.1")
    os.killpg(process.pid, signal.SIGKILL)
    finish(process)
    assert not (stages / "part@c.json").exists()
    (project.path / "go").write_text("")
    done = project.awf("run", "killed.py", "--id", "k", "--continue", "--json")
    assert done.code == 0, done.stderr
    assert done.out["value"] == ["a", "b", "c", "d"]
    assert calls(project, 2) == ["c", "d"]


def test_from_stage_one_branch_reruns_that_branch_and_what_follows(project: Project) -> None:
    workflow = review_project(project)
    assert project.awf("run", str(workflow), "--id", "f").code == 0
    plan = project.awf("run", str(workflow), "--id", "f", "--continue", "--from-stage", "review@b", "--plan")
    assert plan.code == 0, plan.stderr
    assert "▸ review@b  start point (--from-stage)" in plan.stdout
    assert "↺ review@a  reuse: succeeded in attempt 1" in plan.stdout
    done = project.awf("run", str(workflow), "--id", "f", "--continue", "--from-stage", "review@b", "--json")
    assert done.code == 0, done.stderr
    assert calls(project, 2) == ["b", "summary"]
    assert project.stage("review", "f", "summary")["attempt"] == 2  # type: ignore[index]
    assert project.stage("review", "f", "review@a")["attempt"] == 1  # type: ignore[index]
    # --from-stage with the fan-out's name redoes every branch.
    again = project.awf("run", str(workflow), "--id", "f", "--continue", "--from-stage", "review")
    assert again.code == 0, again.stderr
    assert calls(project, 3) == [*LENSES, "summary"]
    # What a branch did is read by its name.
    logs = project.awf("logs", "review/f", "--stage", "review@b")
    assert logs.code == 0 and "▸ review@b" in logs.stdout and "review@a" not in logs.stdout
    runs = project.awf("runs", "review/f")
    assert all(f"review@{lens}" in runs.stdout for lens in LENSES)


def test_values_give_one_branch_and_the_others_are_reused(project: Project) -> None:
    workflow = review_project(project, failing="c")
    assert project.awf("run", str(workflow), "--id", "v").code == 1
    project.write("values.json", json.dumps({"review@c": "C, given"}))
    done = project.awf(
        "run", str(workflow), "--id", "v", "--continue", "--from-stage", "summary", "--values", "values.json", "--json"
    )
    assert done.code == 0, done.stderr
    assert done.out["value"] == ["A", "B", "C, given", "D", "E", "F"]
    assert calls(project, 2) == ["summary"]
    assert project.stage("review", "v", "review@c")["origin"] == "provided"  # type: ignore[index]


def test_changed_items_reuse_the_branches_still_asked_and_leave_the_others(project: Project) -> None:
    workflow = review_project(project, lenses=["a", "b", "c"], failing="b")
    assert project.awf("run", str(workflow), "--id", "c").code == 1
    (project.path / "lenses.json").write_text(json.dumps(["a", "c", "d"]))
    done = project.awf("run", str(workflow), "--id", "c", "--continue", "--json")
    assert done.code == 0, done.stderr
    assert done.out["value"] == ["A", "C", "D"]
    assert calls(project, 2) == ["d", "summary"]
    assert project.stage("review", "c", "review@b") is not None  # left in the record
    assert project.stage("review", "c", "review")["branches"] == ["a", "c", "d"]  # type: ignore[index]
    assert "2 of 3 branches" not in done.stderr and "⇇ review  1 of 3 branches succeeded, 2 reused" in done.stderr


def test_two_items_with_one_key_or_a_key_that_cannot_name_a_branch_fail_the_fan_out(project: Project) -> None:
    project.write(
        "keys.py",
        """
        import json, os

        import awf


        @awf.workflow(name="keys", description="Keys from the environment.")
        async def keys(wf: awf.Context) -> list[str]:
            items = json.loads(os.environ["ITEMS"])
            return await wf.each("check", items, lambda item: item, result=str, key=lambda item: item)
        """,
    )
    same = project.awf("run", "keys.py", "--id", "d", env={"ITEMS": '["x", "y", "x"]'})
    assert same.code == 1
    assert "failed in check" in same.stderr and "items 0 and 2 have the same key 'x'" in same.stderr
    bad = project.awf("run", "keys.py", "--id", "b", env={"ITEMS": '["ok", "Not OK"]'})
    assert bad.code == 1 and "key 'Not OK' of item 1 cannot name a branch" in bad.stderr


PARALLEL = """
    import asyncio, os
    from pathlib import Path

    import awf


    @awf.workflow(name="par", description="One branch fails.")
    async def par(wf: awf.Context) -> list[int]:
        async def one(n: int) -> int:
            if n == 0:
                raise ValueError("zero")
            if os.environ.get("FAIL_FAST"):
                await asyncio.Event().wait()  # only a cancel ends it
            Path(f"done.{n}").write_text("")
            if n == 3:
                raise ValueError("three")
            return n

        return await wf.stage(
            "all",
            lambda: wf.parallel(range(4), one, label="checks", fail_fast=bool(os.environ.get("FAIL_FAST"))),
            result=list[int],
        )
"""


def test_parallel_lets_the_others_finish_and_raises_the_first_error_naming_the_others(project: Project) -> None:
    project.write("par.py", PARALLEL)
    done = project.awf("run", "par.py", "--id", "p")
    assert done.code == 1
    assert sorted(path.name for path in project.path.glob("done.*")) == ["done.1", "done.2", "done.3"]
    assert "ValueError: zero" in done.stderr and "wf.parallel checks: 1 other branch failed" in done.stderr
    assert "⇉ checks  4 branches" in done.stderr and "  ✗ checks #1  failed: ValueError: zero" in done.stderr


def test_parallel_with_fail_fast_cancels_the_others(project: Project) -> None:
    project.write("par.py", PARALLEL)
    done = project.awf("run", "par.py", "--id", "p", env={"FAIL_FAST": "1"})
    assert done.code == 1, done.stderr
    assert not list(project.path.glob("done.*"))
    assert "wf.parallel checks: 0 other branches failed, 3 cancelled" in done.stderr


def test_a_stage_entered_while_another_runs_in_a_parallel_fails(project: Project) -> None:
    project.write(
        "two.py",
        """
        import asyncio

        import awf


        @awf.workflow(name="two", description="Two stages at once.")
        async def two(wf: awf.Context) -> None:
            async def wait() -> None:
                await asyncio.sleep(0)

            await wf.parallel(["a", "b"], lambda name: wf.stage(name, wait))
        """,
    )
    done = project.awf("run", "two.py", "--id", "t")
    assert done.code == 1 and "one stage at a time" in done.stderr and "wf.each" in done.stderr


def test_values_give_the_whole_fan_out_as_a_list_in_the_items_order(project: Project) -> None:
    workflow = review_project(project, lenses=["a", "b"])
    project.write("values.json", json.dumps({"review": ["A, given", "B, given"]}))
    given = ("--from-stage", "summary", "--values", "values.json")
    done = project.awf("run", str(workflow), "--id", "w", *given, "--json")
    assert done.code == 0, done.stderr
    assert done.out["value"] == ["A, given", "B, given"]
    assert calls(project, 1) == ["summary"]
    assert project.stage("review", "w", "review@b")["origin"] == "provided"  # type: ignore[index]
