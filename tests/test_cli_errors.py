"""Errors for people and for scripts: the user's own frames, one `awf:` line, and JSON with --json."""

from __future__ import annotations

import json

import pytest
from conftest import Project
from reading_runs import run, write_steps


def test_a_workflow_file_that_does_not_import_names_its_line_and_shows_only_its_own_frames(project: Project):
    project.write("fix_issue.py", "import awf\n\n\ndef broken(:\n    pass\n")
    result = project.awf("run", "fix_issue.py")
    assert result.code == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == "awf: fix_issue.py:4: SyntaxError: invalid syntax"
    assert "def broken(:" in result.stderr and "Traceback" not in result.stderr
    assert "awf/" not in result.stderr.replace(str(project.path), "")  # no frame of awf's own
    project.write("helpers.py", "def load():\n    raise KeyError('token')\n")
    project.write("uses.py", "import awf\nimport helpers\n\nhelpers.load()\n")
    result = project.awf("run", "uses.py")
    assert result.code == 1
    assert result.stderr.splitlines()[0] == "awf: uses.py:4: KeyError: 'token'"
    assert 'uses.py", line 4' in result.stderr and 'helpers.py", line 2, in load' in result.stderr
    assert "loader.py" not in result.stderr


@pytest.mark.parametrize("name", ["a/b", ".."])
def test_a_workflow_whose_name_breaks_the_rules_is_refused_in_one_line(project: Project, name: str):
    project.write(
        "named.py",
        f"""
        import awf


        @awf.workflow(name={name!r}, description="A bad name.")
        async def named(wf):
            return None
        """,
    )
    result = project.awf("run", "named.py")
    assert result.code == 2
    assert result.stderr.splitlines() == [
        f"awf: named.py:4: workflow name {name!r} may hold only letters, digits, '.', '_', '@' and '-', "
        "and must start with a letter or digit"
    ]


def test_a_stage_that_throws_shows_the_users_frames_and_the_log_keeps_the_whole_traceback(project: Project):
    project.write(
        "thrower.py",
        """
        import awf


        def check(branch):
            raise ValueError(f"no branch {branch}")


        @awf.workflow(name="thrower", description="A stage that throws.")
        async def thrower(wf):
            async def build():
                check("fix/1")

            await wf.stage("build", build)
        """,
    )
    result = project.awf("run", "thrower.py", "--id", "t1")
    assert result.code == 1
    assert 'thrower.py", line 13, in thrower' in result.stderr
    assert 'thrower.py", line 5, in check' in result.stderr
    assert "ValueError: no branch fix/1" in result.stderr
    assert "context.py" not in result.stderr and "attempt.py" not in result.stderr
    [record] = [line["record"] for line in project.log("thrower", "t1") if line["kind"] == "stage"]
    assert "context.py" in record["error"]["traceback"] and "in check" in record["error"]["traceback"]


def error_of(result) -> dict:
    assert result.stdout.count("\n") == 1, result.stdout  # one JSON object, on stdout
    return json.loads(result.stdout)["error"]


def test_json_answers_in_json_on_every_path(project: Project):
    write_steps(project)
    assert run(project, "j1", "stop").code == 3
    taken = project.awf("run", "steps.py", "--id", "j1", "--json", "--", "stop")
    assert taken.code == 2
    error = error_of(taken)
    assert error["kind"] == "refused" and error["exit_code"] == 2 and "exists" in error["message"]
    assert taken.stderr.startswith("awf: run steps/j1 exists")
    assert error_of(project.awf("run", "missing.py", "--json")) == {
        "kind": "workflow-file",
        "message": "workflow file missing.py does not exist",
        "exit_code": 2,
    }
    assert error_of(project.awf("run", "steps.py", "--json", "--nope"))["kind"] == "usage"
    project.write("raises.py", "raise RuntimeError('not today')\n")
    assert error_of(project.awf("run", "raises.py", "--json")) | {"message": ""} == {
        "kind": "workflow-file",
        "message": "",
        "exit_code": 1,
    }
    # An attempt that ends answers with its ending, never with an error of a kind a code suggests.
    failed = project.awf("run", "steps.py", "--id", "j2", "--json", "--", "fail")
    assert failed.code == 1 and json.loads(failed.stdout)["outcome"] == "failed"
    for args, kind, code in [
        (("runs", "steps/none"), "no-such-run", 1),
        (("runs", "steps/j1", "--status", "stopped"), "usage", 2),
        (("runs", "steps/no such id"), "usage", 2),
        (("logs", "steps/j1", "--attempt", "9"), "no-such-run", 1),
        (("send", "steps/j1", "ci"), "refused", 2),
        (("send", "steps/none", "ci"), "no-such-run", 1),
    ]:
        result = project.awf(*args, "--json")
        assert result.code == code, (args, result.stderr)
        error = error_of(result)
        assert (error["kind"], error["exit_code"]) == (kind, code), args
        assert result.stderr == f"awf: {error['message']}\n"
    log = project.run_dir("steps", "j1") / "run.jsonl"
    log.write_text(log.read_text().replace('"kind": "stage-start"', '"kind": 7', 1))
    broken = project.awf("logs", "steps/j1", "--json")
    assert broken.code == 3
    last = json.loads(broken.stdout.splitlines()[-1])["error"]
    assert last["kind"] == "unreadable" and str(log) in last["message"]


def test_each_problem_has_one_kind_and_the_seeds_exit_code():
    from awf.cli.errors import ExitCode, Problem

    assert [int(code) for code in ExitCode] == [0, 1, 2, 3, 128, 130]  # no code is named twice
    codes = {problem.kind: {int(p.code) for p in Problem if p.kind == problem.kind} for problem in Problem}
    assert codes == {
        "usage": {2},
        "refused": {2},
        "workflow-file": {1, 2},  # its own code raised as it loaded: 1; cannot be loaded: 2
        "no-such-run": {1},
        "not-running": {1},
        "not-ended": {1},
        "write-failed": {1},
        "unreadable": {3},
    }
