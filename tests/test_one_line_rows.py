"""A reason of several lines is one line in a table, its first and last in the closing block, and whole in
awf logs and out.json."""

from __future__ import annotations

import json

from conftest import Project

REASON = "the builder said no:\nline two of its answer\nline three"

WORKFLOW = f"""
import awf


@awf.workflow(name="talk", description="A stop with a long reason.")
async def talk(wf):
    async def build():
        wf.stop({REASON!r})

    await wf.stage("build", build, result={{"type": "string"}})
"""


def test_a_reason_of_several_lines_is_cut_to_its_first_in_tables_and_kept_whole_in_logs(project: Project):
    project.write("talk.py", WORKFLOW)
    first = project.awf("run", "talk.py", "--id", "t1")
    assert first.code == 3
    # The closing block shows the first line and the last, and where the whole of it is.
    why = "  why:     the builder said no:\n           line three\n           (the whole of it: awf logs talk/t1)\n"
    assert why in first.stderr
    assert "■ build  stopped: the builder said no: …\n" in first.stderr
    assert "line two" not in first.stderr

    shown = project.awf("runs", "talk/t1")
    assert shown.code == 0
    assert "line two" not in shown.stdout
    rows = [line for line in shown.stdout.splitlines() if "the builder said no" in line]
    assert len(rows) == 2 and all(row.endswith("the builder said no: …") for row in rows)  # the attempt, the stage

    assert json.loads((project.run_dir("talk", "t1") / "out.json").read_text())["reason"] == REASON
    assert project.awf("runs", "talk/t1", "--json").out["attempts"][0]["reason"] == REASON
    logs = project.awf("logs", "talk/t1")
    assert "line two of its answer" in logs.stdout and "line three" in logs.stdout
