"""Turns of exec agents, through the real CLI: each way a turn can end, and what it records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import Project

ASK = str(Path(__file__).parent / "agents" / "ask.py") + ":ask"
PLAN_VALUE = {"branch": "fix/212", "steps": ["parse years before 1970"]}


def turns(project: Project, run_id: str, workflow: str = "ask") -> list[dict[str, Any]]:
    return [entry for entry in project.log(workflow, run_id) if entry["kind"] == "turn"]


def turn_dir(project: Project, run_id: str, attempt: int = 1, agent: str = "planner", turn: int = 1) -> Path:
    return project.run_dir("ask", run_id) / "agents" / str(attempt) / agent / f"turn-{turn}"


def test_an_answer_through_awf_answer_is_the_turns_value(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "a", "--", "answer.py", json.dumps(PLAN_VALUE))
    assert done.code == 0, done.stderr
    assert project.stage("ask", "a", "plan")["value"] == PLAN_VALUE
    [turn] = turns(project, "a")
    assert turn["outcome"] == "answered" and turn["by"] == "awf answer"
    assert turn["value"] == PLAN_VALUE
    assert turn["stage"] == "plan" and turn["agent"] == "planner" and turn["harness"] == "exec"
    assert turn["label"] == "plan #212" and turn["prompt"] == "Plan a fix for #212."
    assert turn["nudged"] is False and turn["seconds"] >= 0
    # The progress shows the agent under its stage.
    lines = done.stderr.splitlines()
    assert lines.index("▸ plan") < next(i for i, line in enumerate(lines) if "◦ planner (exec) · plan #212" in line)
    assert any(line.startswith("  ✓ planner answered") for line in lines)


def test_the_prompt_ends_with_how_to_answer_and_the_schema(project: Project) -> None:
    assert project.awf("run", ASK, "--id", "p", "--", "answer.py", json.dumps(PLAN_VALUE)).code == 0
    sent = (turn_dir(project, "p") / "1.prompt.txt").read_text()
    assert sent.startswith("Plan a fix for #212.\n")
    how = sent[sent.index("awf answer") :]
    assert '"required": [' in how and '"branch"' in how and "additionalProperties" in how


def test_an_answer_printed_last_on_stdout_is_taken(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "s", "--", "prints.py", json.dumps(PLAN_VALUE, indent=2))
    assert done.code == 0, done.stderr
    assert project.stage("ask", "s", "plan")["value"] == PLAN_VALUE
    assert turns(project, "s")[0]["by"] == "the agent's output"


def test_without_a_schema_the_answer_is_text(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "t", "--", "prints.py", "Fix parse_date.", env={"TEXT_ANSWER": "1"})
    assert done.code == 0, done.stderr
    assert project.stage("ask", "t", "plan")["value"] == "Read the code; the bug is in parse_date.\nFix parse_date."


def test_an_invalid_answer_is_refused_with_every_problem_then_corrected(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "c", "--", "corrects.py", json.dumps(PLAN_VALUE))
    assert done.code == 0, done.stderr
    code, said = (project.run_dir("ask", "c") / "agents/1/planner/rejected.txt").read_text().split("\n", 1)
    assert code == "1"
    assert "3 problems" in said and "the turn is still open" in said
    assert "$.branch: 5 is not of type 'string'" in said
    assert "'steps' is a required property" in said
    assert "'extra' was unexpected" in said
    assert "run awf answer again" in said
    assert project.stage("ask", "c", "plan")["value"] == PLAN_VALUE


def test_no_answer_then_the_recovery_prompt_then_unanswered(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "n", "--", "silent.py")
    assert done.code == 3, done.stderr
    agent_dir = project.run_dir("ask", "n") / "agents/1/planner"
    first, second = (agent_dir / "stdin.1.txt").read_text(), (agent_dir / "stdin.2.txt").read_text()
    assert first.startswith("Plan a fix for #212.")
    assert second.startswith("You stopped without giving awf your answer (it stopped without answering)")
    assert "awf answer" in second and second.rstrip().endswith(first.rstrip())
    assert not (agent_dir / "stdin.3.txt").exists()
    [turn] = turns(project, "n")
    assert turn["outcome"] == "unanswered" and turn["nudged"] is True
    assert "the recovery prompt brought no answer either" in turn["reason"]
    assert "↻ planner has not answered" in done.stderr
    assert project.stage("ask", "n", "plan")["outcome"] == "stopped"


def test_a_printed_answer_that_does_not_fit_gets_the_recovery_prompt_naming_the_problem(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "w", "--", "prints.py", '{"branch": "fix/212"}')
    assert done.code == 3
    [turn] = turns(project, "w")
    assert turn["outcome"] == "unanswered"
    assert "'steps' is a required property" in turn["reason"]
    recovery = (turn_dir(project, "w") / "2.prompt.txt").read_text()
    assert "'steps' is a required property" in recovery


def test_output_that_ends_in_no_json_answer_is_named_in_the_recovery_prompt_and_the_reason(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "ok", "--", "prints.py", "all good, 3 fixes")
    assert done.code == 3
    said = 'its output ended with "all good, 3 fixes", not a JSON answer, and it did not run awf answer'
    assert said in (turn_dir(project, "ok") / "2.prompt.txt").read_text()
    [turn] = turns(project, "ok")
    assert turn["outcome"] == "unanswered" and said in turn["reason"]


def test_a_tool_with_recovery_off_runs_once_and_its_turn_ends_unanswered(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "tool", "--", "prints.py", "all good, 3 fixes", env={"NO_RECOVERY": "1"})
    assert done.code == 3, done.stderr
    folder = turn_dir(project, "tool")
    assert (folder / "1.prompt.txt").exists() and not (folder / "2.prompt.txt").exists()
    [turn] = turns(project, "tool")
    assert turn["outcome"] == "unanswered" and turn["nudged"] is False
    assert turn["reason"] == (
        'its output ended with "all good, 3 fixes", not a JSON answer, and it did not run awf answer '
        '(its runtime has "recovery": false: no recovery prompt)'
    )
    assert "↻" not in done.stderr


def test_output_past_max_output_keeps_its_ends_says_what_was_dropped_and_the_answer_is_taken(
    project: Project,
) -> None:
    env = {"MAX_OUTPUT": "4096"}
    done = project.awf("run", ASK, "--id", "loud", "--", "loud.py", "20000", json.dumps(PLAN_VALUE), env=env)
    assert done.code == 0, done.stderr
    assert project.stage("ask", "loud", "plan")["value"] == PLAN_VALUE
    kept = (turn_dir(project, "loud") / "1.stdout.txt").read_text()
    assert len(kept.encode()) < 4096 + 200
    assert kept.startswith("line 0: checking the code")
    assert kept.endswith(json.dumps(PLAN_VALUE) + "\n")
    printed = sum(len(f"line {n}: checking the code, all of it, again\n") for n in range(20000))
    printed += len(json.dumps(PLAN_VALUE)) + 1
    [note] = [line for line in kept.splitlines() if line.startswith("[awf: ")]
    dropped = printed - (len(kept.encode()) - len(note) - 1)
    assert note == (
        f"[awf: {dropped:,} bytes of the middle of this output were dropped: it was {printed:,} bytes, "
        'past the 4,096 its runtime keeps ("max_output")]'
    )
    # Every line kept is whole: the cut falls between lines.
    assert all(line.startswith(("line ", "[awf: ", "{")) for line in kept.splitlines())


def test_output_under_max_output_is_kept_whole(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "quiet", "--", "loud.py", "50", json.dumps(PLAN_VALUE))
    assert done.code == 0, done.stderr
    kept = (turn_dir(project, "quiet") / "1.stdout.txt").read_text()
    assert len(kept.splitlines()) == 51 and "[awf: " not in kept


def test_a_max_output_that_is_not_a_number_of_bytes_is_named(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "cap", "--", "loud.py", "1", "{}", env={"MAX_OUTPUT": "12"})
    assert done.code != 0
    assert '"max_output" is the bytes of each output stream kept on disk, at least 1024, not 12' in done.stderr


def test_a_turn_past_its_timeout_is_timed_out_and_its_agent_ended(project: Project) -> None:
    pidfile = project.path / "agent.pid"
    done = project.awf("run", ASK, "--id", "slow", "--", "sleeps.py", str(pidfile), env={"TURN_TIMEOUT": "1"})
    assert done.code == 3, done.stderr
    [turn] = turns(project, "slow")
    assert turn["outcome"] == "timed-out"
    assert turn["reason"].startswith("timed out after 1.") and "no answer by the turn's timeout" in turn["reason"]
    assert 1 <= turn["seconds"] < 10
    assert_gone(int(pidfile.read_text()))


def test_a_crash_of_the_agent_fails_the_turn_with_its_exit_code_and_stderr(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "x", "--", "crashes.py")
    assert done.code == 3
    [turn] = turns(project, "x")
    assert turn["outcome"] == "failed" and turn["nudged"] is False
    assert "exited with code 3" in turn["reason"] and "error: out of memory" in turn["reason"]
    assert "✗ planner failed:" in done.stderr


def test_a_program_that_is_not_installed_fails_the_turn_saying_so(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "m", "--", "no-such-agent-program")
    assert done.code == 3
    [turn] = turns(project, "m")
    assert turn["outcome"] == "failed"
    assert "no-such-agent-program is not installed" in turn["reason"]
    assert "Traceback" not in done.stderr


def test_an_unknown_harness_fails_the_turn_naming_the_harnesses(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "u", "--", "answer.py", "{}", env={"HARNESS": "nonesuch"})
    assert done.code == 3
    reason = turns(project, "u")[0]["reason"]
    assert "no harness named 'nonesuch'" in reason and "exec" in reason
    assert "Traceback" not in done.stderr


def test_the_same_key_with_another_spec_is_refused(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "r", "--", "answer.py", "{}", env={"REOPEN": "1"})
    assert done.code == 1
    assert "agent planner is already open with" in done.stderr
    assert "give the other one a key of its own" in done.stderr


def test_a_continue_opens_new_agents_that_remember_nothing(project: Project) -> None:
    assert project.awf("run", ASK, "--id", "k", "--", "silent.py").code == 3
    done = project.awf("run", ASK, "--id", "k", "--continue")
    assert done.code == 3
    agents = [entry for entry in project.log("ask", "k") if entry["kind"] == "agent"]
    assert [(entry["attempt"], entry["agent"]) for entry in agents] == [(1, "planner"), (2, "planner")]
    assert (project.run_dir("ask", "k") / "agents/2/planner/turn-1").is_dir()


def test_two_turns_of_one_agent_between_stages_and_in_one(project: Project) -> None:
    twice = ASK.replace(":ask", ":twice")
    done = project.awf("run", twice, "--id", "2")
    assert done.code == 0, done.stderr
    # An exec agent has no session, but its folder is the same on every turn.
    assert project.stage("twice", "2", "second")["value"] == [{"turn": 1, "seen": []}, {"turn": 2, "seen": ["1"]}]
    first, second = [entry for entry in project.log("twice", "2") if entry["kind"] == "turn"]
    assert "stage" not in first and second["stage"] == "second"
    assert (first["turn"], second["turn"]) == (1, 2)
    agent = json.loads((project.run_dir("twice", "2") / "agents/1/noter/agent.json").read_text())
    assert agent["turn"] == 2
    assert "  ◦ noter (exec) · turn 2 · Second." in done.stderr


def test_what_an_agent_leaves_in_its_process_group_is_ended_with_its_turn(project: Project) -> None:
    childfile = project.path / "child.pid"
    done = project.awf("run", ASK, "--id", "f", "--", "forks.py", str(childfile))
    assert done.code == 0, done.stderr
    assert_gone(int(childfile.read_text()))


def assert_gone(pid: int) -> None:
    from awf.record.liveness import is_alive

    assert not is_alive(pid, None), f"agent process {pid} is still running"


def test_max_cost_says_once_that_it_cannot_see_an_exec_agent(project: Project) -> None:
    done = project.awf("run", ASK, "--id", "mc", "--max-cost", "1.00", "--", "answer.py", json.dumps(PLAN_VALUE))
    assert done.code == 0, done.stderr
    said = "--max-cost cannot see what some agents spend: agent planner reports no cost"
    assert done.stderr.count(said) == 1
    assert done.stderr.index(said) < done.stderr.index("◦ planner (exec)")  # before the turn it cannot see
    without = project.awf("run", ASK, "--id", "nb", "--", "answer.py", json.dumps(PLAN_VALUE))
    assert without.code == 0 and "--max-cost" not in without.stderr
