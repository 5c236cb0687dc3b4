"""The seeds' example: attempt 1 stops in review because the reviewer does not answer; the
continue reuses plan and implement, opens only the reviewer, and its prompt names the commit."""

from __future__ import annotations

from pathlib import Path

from conftest import Project

FIX_ISSUE = str(Path(__file__).parent / "agents" / "fix_issue.py")
ISSUE = "#212: dates before 1970 parse as null"


def test_a_continue_reuses_plan_and_implement_and_only_the_review_runs_again(project: Project) -> None:
    first = project.awf("run", FIX_ISSUE, "--id", "212", "--", ISSUE, env={"REVIEWER_AWAY": "1"})
    assert first.code == 3, first.stderr
    assert "■ fix-issue/212 stopped in review (attempt 1, exit 3)" in first.stderr
    assert "no review: it stopped without answering" in first.stderr
    assert project.stage("fix-issue", "212", "plan")["value"]["branch"] == "fix/212"
    assert project.stage("fix-issue", "212", "implement")["value"] == {"commit": "4be1c07"}

    second = project.awf("run", FIX_ISSUE, "--id", "212", "--continue")
    assert second.code == 0, second.stderr
    assert second.out["value"] == {"approved": True, "findings": []}
    assert "↺ plan  from attempt 1 · fix/212" in second.stderr
    assert "↺ implement  from attempt 1 · 4be1c07" in second.stderr

    log = project.log("fix-issue", "212")
    # Reused stages open no agent.
    assert [entry["agent"] for entry in log if entry["kind"] == "agent" and entry["attempt"] == 2] == ["reviewer"]
    [review] = [entry for entry in log if entry["kind"] == "turn" and entry["attempt"] == 2]
    assert "4be1c07 on fix/212" in review["prompt"]
    assert review["stage"] == "review" and review["outcome"] == "answered"
