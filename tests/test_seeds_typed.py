"""The seeds' two workflows, written with pydantic models, through the real `awf run` and exec agents.

ship-ticket (the Runs page): the builder does not answer, a continue reuses the plan and builds;
and a new run started part-way, at build, with the plan given in a values file. fix-issue (the
Durability page) runs in test_agents_fix_issue.py, and its seeds' test in test_testing_continue.py.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from conftest import Project

SHIP_TICKET = str(Path(__file__).parent / "agents" / "ship_ticket.py")


def test_ship_ticket_stops_in_build_and_a_continue_reuses_the_plan(project: Project):
    first = project.awf("run", SHIP_TICKET, "--", "ABC-1", env={"BUILDER_AWAY": "1"})
    assert first.code == 3, first.stderr
    assert "■ ship-ticket/ABC-1 stopped in build (attempt 1, exit 3)" in first.stderr
    assert project.stage("ship-ticket", "ABC-1", "plan")["value"] == {"doc": "docs/ABC-1.md"}

    second = project.awf("run", SHIP_TICKET, "--id", "ABC-1", "--continue", "--json")
    assert second.code == 0, second.stderr
    assert second.out["value"] == {"branch": "abc-1", "summary": "built docs/ABC-1.md"}
    assert "↺ plan  from attempt 1 · docs/ABC-1.md" in second.stderr
    opened = [e["agent"] for e in project.log("ship-ticket", "ABC-1") if e["kind"] == "agent" and e["attempt"] == 2]
    assert opened == ["builder"]  # the reused plan opens no planner


def test_ship_ticket_starts_part_way_at_build_with_the_plan_given(project: Project):
    stopped = project.awf("run", SHIP_TICKET, "--from-stage", "build", "--json", "--", "ABC-1")
    assert stopped.code == 3, stopped.stderr
    assert "plan: {doc: string}" in stopped.out["reason"]
    assert stopped.out["needs"]["plan"]["properties"]["doc"] == {"title": "Doc", "type": "string"}
    project.write("values.json", json.dumps({"plan": {"doc": "docs/ABC-1.md"}}))
    go_on = shlex.split(stopped.out["go_on"])
    assert go_on[-2:] == ["--values", "values.json"]
    done = project.awf(*go_on[1:])  # awf run FILE ...
    assert done.code == 0, done.stderr
    assert "↺ plan  given with --values" in done.stderr
    [turn] = [e for e in project.log("ship-ticket", "ABC-1") if e["kind"] == "turn"]
    assert turn["agent"] == "builder" and turn["prompt"] == "Implement docs/ABC-1.md on a new branch."
