"""Turns in `awf logs`, `awf runs` and the views: an `exec` agent's turns, read off the record."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import Project

AGENT = """
import json, subprocess, sys
prompt = sys.stdin.read()
word = prompt.splitlines()[0].split()[-1]
subprocess.run([sys.argv[1], "-m", "awf", "answer", json.dumps({"word": word})], check=True)
"""

FLOW = f"""
import sys

import awf

WORD = {{"type": "object", "required": ["word"], "properties": {{"word": {{"type": "string"}}}}}}


@awf.workflow(name="echo", description="Ask an agent twice.")
async def echo(wf):
    async def ask():
        agent = await wf.agents.open(key="echoer", runtime={{"harness": "exec",
                                     "command": [{sys.executable!r}, "agent.py", {sys.executable!r}]}})
        first = await agent.run(prompt="Say the last word: alpha", schema=WORD, label="first word", timeout=60)
        second = await agent.run(prompt="Say the last word: beta", schema=WORD, timeout=60)
        return {{"words": [first.outcome.value["word"], second.outcome.value["word"]]}}

    return await wf.stage("ask", ask, result={{"type": "object"}}, summary=lambda v: " ".join(v["words"]))
"""


@pytest.fixture(scope="module")
def echoed(tmp_path_factory):
    project = Project(tmp_path_factory.mktemp("turns"))
    project.write("agent.py", AGENT)
    project.write("echo.py", FLOW)
    result = project.awf("run", "echo.py", "--id", "e1", timeout=120)
    assert result.code == 0, result.stderr
    return project, result


def test_each_turn_is_an_entry_with_its_agent_outcome_time_and_handle(echoed):
    project, _ = echoed
    result = project.awf("logs", "echo/e1", "--json", "--agent", "echoer")
    items = [json.loads(line) for line in result.stdout.splitlines()]
    turns = [item for item in items if item["entry"]["kind"] == "turn"]
    assert len(turns) == 2
    assert turns[0]["text"].startswith("#1 [ask] turn echoer#1 answered  ")
    assert "· first word  (turn 1/echoer/1" in turns[0]["text"]
    assert "(turn 1/echoer/2" in turns[1]["text"]
    assert {item["entry"]["agent"] for item in items} == {"echoer"}
    assert any(item["entry"]["kind"] == "agent" for item in items)


def test_turn_handle_prints_its_prompt_and_answer(echoed):
    project, _ = echoed
    result = project.awf("logs", "echo/e1", "--turn", "1/echoer/2")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("#1 [ask] turn echoer#2 answered")
    assert "prompt:" in lines and "  Say the last word: beta" in lines
    answer = result.stdout.split("answer:\n", 1)[1]
    assert json.loads(answer) == {"word": "beta"}
    missing = project.awf("logs", "echo/e1", "--turn", "1/echoer/9")
    assert missing.code == 1 and "1/echoer/1, 1/echoer/2" in missing.stderr


def test_the_closing_block_counts_the_turns(echoed):
    _, result = echoed
    assert "  totals:  1 stage (1 ran) · " in result.stderr and " · 2 turns" in result.stderr


def test_cost_is_the_sum_of_the_turns_that_report_one(echoed, tmp_path):
    project, _ = echoed
    assert project.awf("runs", "--json").out["runs"][0]["cost"] is None
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(project.run_dir("echo", "e1"), root / "echo" / "e1")
    log = root / "echo" / "e1" / "run.jsonl"
    lines = []
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry["kind"] == "turn":  # as a harness that reports cost writes it
            entry["cost"] = 0.25 if entry["turn"] == 1 else 0.5
        lines.append(json.dumps(entry))
    log.write_text("\n".join(lines) + "\n")
    assert project.awf("runs", "--json", "--run-root", str(root)).out["runs"][0]["cost"] == 0.75
    assert "$0.75" in project.awf("runs", "--run-root", str(root)).stdout
    detail = project.awf("runs", "echo/e1", "--json", "--run-root", str(root)).out
    assert detail["cost"] == 0.75 and detail["attempts"][0]["cost"] == 0.75
    text = project.awf("logs", "echo/e1", "--run-root", str(root), "--agent", "echoer").stdout
    assert "$0.25" in text and "$0.50" in text


def test_the_live_view_shows_the_agent_at_work_with_its_label(echoed):
    from test_view_live import ANSI, on_terminal

    project, _ = echoed
    code, _, screen = on_terminal(project, "run", "echo.py", "--id", "e2", timeout=120)
    assert code == 0
    plain = ANSI.sub("", screen)
    assert "◦ echoer  exec · first word" in plain
    assert "totals:  1 stage (1 ran)" in plain and "2 turns" in plain
