"""`awf answer` from outside awf: the channel refuses what it must, and says what to fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Project, finish

PAIR = str(Path(__file__).parent / "agents" / "ask.py") + ":pair"
AWF = [sys.executable, "-m", "awf"]


def answer(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    clean = {name: value for name, value in os.environ.items() if not name.startswith("AWF_")}
    return subprocess.run(
        [*AWF, "answer", *args], env={**clean, **env}, input=stdin, capture_output=True, text=True, timeout=30
    )


class Pair:
    """Two agents of one run, waiting in their turns: their environments, and the attempt."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.process = project.start("run", PAIR, "--id", "two", "--", str(project.path))
        self.env: dict[str, dict[str, str]] = {}
        for name in ("first", "second"):
            project.wait_for(project.path / f"{name}.json")
            self.env[name] = json.loads((project.path / f"{name}.json").read_text())

    def finish(self):
        for name in ("first", "second"):
            (self.project.path / f"{name}.json.go").touch()
        return finish(self.process)


@pytest.fixture
def pair(project: Project):
    waiting = Pair(project)
    try:
        yield waiting
    finally:
        if waiting.process.poll() is None:
            waiting.finish()


def test_answers_are_checked_settled_once_and_only_by_their_own_agent(project: Project, pair) -> None:
    first, second = pair.env["first"], pair.env["second"]

    broken = answer(first, '{"ok": tru')
    assert broken.returncode == 1
    assert broken.stderr.startswith("awf: the answer was not taken: 1 problem; the turn is still open")
    assert "the answer is not JSON: Expecting value at line 1 column 8" in broken.stderr

    unfit = answer(first, "[1]")
    assert unfit.returncode == 1 and "$: [1] is not of type 'object'" in unfit.stderr

    # The first agent's token does not open the second agent's turn.
    stolen = answer({**second, "AWF_AGENT_TOKEN": first["AWF_AGENT_TOKEN"]}, '{"ok": true}')
    assert stolen.returncode == 2
    assert "is the folder of agent second of run pair/two" in stolen.stderr
    assert "an agent answers only its own turns" in stolen.stderr

    taken = answer(first, stdin='{"ok": true}')
    assert taken.returncode == 0, taken.stderr
    assert taken.stdout.strip() == "answer taken: turn 1 of agent first in run pair/two"

    again = answer(first, '{"ok": false}')
    assert again.returncode == 2
    assert "turn 1 of agent first of run pair/two (attempt 1) has settled already: answered" in again.stderr
    assert "this one was not taken" in again.stderr

    assert answer(second, "--blocked", "needs a login to the tracker").returncode == 0


def test_the_turns_settle_as_answered_and_blocked_and_the_record_says_so(project: Project, pair) -> None:
    assert answer(pair.env["first"], '{"ok": 1}').returncode == 0
    assert answer(pair.env["second"], "--blocked", "no access to the tracker").returncode == 0
    done = pair.finish()
    assert done.code == 0, done.stderr
    assert project.stage("pair", "two", "both")["value"] == ["answered", "blocked: no access to the tracker"]
    outcome = json.loads((project.run_dir("pair", "two") / "agents/1/first/turn-1/outcome.json").read_text())
    assert outcome["outcome"] == "answered" and outcome["value"] == {"ok": 1} and outcome["by"] == "awf answer"
    turns = {entry["agent"]: entry for entry in project.log("pair", "two") if entry["kind"] == "turn"}
    assert turns["first"]["value"] == {"ok": 1}
    assert turns["second"]["outcome"] == "blocked" and turns["second"]["reason"] == "no access to the tracker"


def test_answer_outside_an_agent_is_refused(project: Project) -> None:
    done = answer({}, '{"ok": true}')
    assert done.returncode == 2
    assert "there is no turn to answer here: AWF_AGENT_DIR and AWF_AGENT_TOKEN are not set" in done.stderr
