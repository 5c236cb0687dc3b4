"""`awf check` finds the rules of a stage a workflow breaks, from its source alone: each rule's
wrong example in docs/check.md gives that rule at its marked line and nothing else, its right one
nothing, and the repository's own workflows nothing; `awf run` says the same as warnings."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from conftest import Project
from test_docs import FENCE, examples

from awf.engine.check import RULES

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "check.md"
MARK = re.compile(r"#\s*<-\s*([a-z-]+)\s*$")


def _pairs() -> dict[str, dict[str, str]]:
    """Each rule's section of docs/check.md: its `python wrong` and `python right` examples."""
    pairs: dict[str, dict[str, str]] = {}
    for section in re.split(r"^### ", PAGE.read_text(), flags=re.M)[1:]:
        rule = section.split("\n", 1)[0].strip().strip("`")
        for match in FENCE.finditer(section):
            info = match["info"].strip().split()
            if info[:1] == ["python"] and info[1:] in (["wrong"], ["right"]):
                pairs.setdefault(rule, {})[info[1]] = textwrap.dedent(match["body"])
    return pairs


PAIRS = _pairs()


def _found(project: Project, name: str, text: str) -> tuple[int, list[tuple[int, str]]]:
    project.write(name, text)
    done = project.awf("check", name, "--json")
    assert done.code in (0, 1), done.stderr
    return done.code, [(finding["line"], finding["rule"]) for finding in json.loads(done.stdout)]


def test_the_page_has_a_wrong_and_a_right_example_of_every_rule():
    assert list(PAIRS) == list(RULES)
    assert all(set(pair) == {"wrong", "right"} for pair in PAIRS.values())


@pytest.mark.parametrize("rule", list(PAIRS))
def test_each_wrong_example_gives_its_rule_at_its_marked_line_and_its_right_one_nothing(project: Project, rule: str):
    wrong = PAIRS[rule]["wrong"]
    marked = [(number, mark[1]) for number, line in enumerate(wrong.splitlines(), 1) if (mark := MARK.search(line))]
    assert marked == [(marked[0][0], rule)]
    assert _found(project, "wrong.py", wrong) == (1, marked)
    assert _found(project, "right.py", PAIRS[rule]["right"]) == (0, [])


def _repository_workflows() -> list[tuple[str, str]]:
    found = []
    for page in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        for kind, name, text in examples(page):
            if kind == "file" and name.endswith(".py") and "@awf.workflow" in text:
                found.append((f"{page.name}:{name}", text))
    for file in sorted((ROOT / "examples").rglob("*.py")):
        found.append((str(file.relative_to(ROOT)), file.read_text()))
    return found


WORKFLOWS = _repository_workflows()
# The examples that break a rule on purpose, to show the mistake and what finds it.
MEANT = {"testing.md:test_second_attempt.py": [(15, "set-in-stage")], "check.md:ship.py": [(10, "set-in-stage")]}


@pytest.mark.parametrize(("where", "text"), WORKFLOWS, ids=[where for where, _ in WORKFLOWS])
def test_the_repositorys_own_workflows_are_clean(project: Project, where: str, text: str):
    found = _found(project, "workflow.py", text)[1]
    assert found == MEANT.get(where, []), found


def test_findings_are_lines_on_stdout_with_file_line_rule_and_what_to_do(project: Project):
    project.write("w.py", PAIRS["not-awaited"]["wrong"])
    done = project.awf("check", "w.py")
    assert done.code == 1 and done.stderr == ""
    assert done.stdout.splitlines() == [
        "w.py:6: not-awaited: wf.stage(...) is not awaited, so the stage never runs, or runs beside another; "
        "write await wf.stage(...), one stage at a time"
    ]


def test_a_clean_file_prints_nothing_and_an_empty_array_for_json(project: Project):
    project.write("w.py", PAIRS["not-awaited"]["right"])
    assert (project.awf("check", "w.py").code, project.awf("check", "w.py").stdout) == (0, "")
    assert project.awf("check", "w.py", "--json").stdout.strip() == "[]"


def test_a_file_that_cannot_be_read_or_parsed_exits_2_with_one_awf_line(project: Project):
    missing = project.awf("check", "nope.py")
    assert (missing.code, missing.stdout) == (2, "")
    assert missing.stderr == "awf: workflow file nope.py does not exist\n"
    project.write("broken.py", "import awf\n\ndef (:\n")
    broken = project.awf("check", "broken.py", "--json")
    assert broken.code == 2
    assert broken.stderr == "awf: broken.py:3: SyntaxError: invalid syntax\n"
    assert json.loads(broken.stdout)["error"]["kind"] == "workflow-file"
    (project.path / "folder").mkdir()
    assert project.awf("check", "folder").code == 2


def test_an_ignore_comment_silences_its_rule_or_every_rule_on_its_line_only(project: Project):
    body = """\
        import subprocess
        from pathlib import Path

        import awf


        @awf.workflow(name="w", description="w", version="1.0.0")
        async def w(wf: awf.Context):
            await wf.stage("a", lambda: None)
            subprocess.run(["true"])  # awf: ignore[effect-between-stages]
            subprocess.run(["true"])  # awf: ignore[write-between-stages]
            Path("x").write_text("x")  # awf: ignore
            Path("x").write_text("x")
        """
    assert _found(project, "w.py", textwrap.dedent(body)) == (
        1,
        [(11, "effect-between-stages"), (13, "write-between-stages")],
    )


def test_awf_run_warns_of_the_findings_as_the_attempt_starts_and_runs_all_the_same(project: Project):
    project.write("w.py", PAIRS["write-between-stages"]["wrong"])
    done = project.awf("run", "w.py", "--id", "one", "--json")
    assert done.code == 0
    assert json.loads(done.stdout)["outcome"] == "completed"
    warnings = [line for line in done.stderr.splitlines() if line.startswith("! warning: ")]
    found = project.awf("check", "w.py").stdout.splitlines()
    assert warnings == [f"! warning: {line}" for line in found if ": no-version: " not in line]
    assert warnings and ": write-between-stages: " in warnings[0]
    assert done.stderr.index("▶ notes/one") < done.stderr.index("! warning: ")  # said by the attempt, once started
    quiet = project.awf("run", "w.py", "--id", "two", "--no-check")
    assert quiet.code == 0 and "warning" not in quiet.stderr
    # A refused run says its refusal alone.
    refused = project.awf("run", "w.py", "--id", "one")
    assert refused.code == 2 and "warning" not in refused.stderr


def test_awf_run_leaves_a_workflow_without_a_version_to_awf_check(project: Project):
    project.write("w.py", PAIRS["no-version"]["wrong"])
    done = project.awf("run", "w.py", "--id", "one")
    assert done.code == 0 and "warning" not in done.stderr
    assert ": no-version: " in project.awf("check", "w.py").stdout


def test_awf_run_leaves_a_file_it_cannot_parse_to_the_loader(project: Project):
    project.write("w.py", "import awf\n\ndef (:\n")
    done = project.awf("run", "w.py")
    assert done.code != 0
    assert "warning" not in done.stderr and done.stderr.startswith("awf: w.py:3: SyntaxError")


def _check(project: Project, body: str) -> list[tuple[int, str]]:
    """The findings of a workflow whose body (from line 7) is `body`."""
    head = 'import subprocess\n\nimport awf\n\n@awf.workflow(name="w", description="w", version="1.0.0")\n'
    signature = "async def w(wf: awf.Context, items: list[str]):\n"
    return _found(project, "w.py", head + signature + textwrap.indent(textwrap.dedent(body), "    "))[1]


def test_a_function_of_the_body_called_between_stages_is_between_stages_and_a_stage_work_is_not(project: Project):
    body = """\
        async def push():
            subprocess.run(["git", "push"])
        async def work():
            subprocess.run(["make"])
        await wf.stage("build", work)
        await push()
    """
    assert _check(project, body) == [(8, "effect-between-stages")]


def test_the_same_name_after_a_branch_that_returns_or_stops_is_no_duplicate(project: Project):
    body = """\
        if items:
            await wf.stage("a", lambda: None)
            return
        if len(items) > 3:
            await wf.stage("a", lambda: None)
            wf.stop("too many")
        await wf.stage("a", lambda: None)
        match items:
            case []:
                await wf.stage("b", lambda: None)
            case _:
                await wf.stage("b", lambda: None)
        try:
            await wf.stage("c", lambda: None)
        except ValueError:
            await wf.stage("c", lambda: None)
    """
    assert _check(project, body) == [(22, "duplicate-name")]


def test_names_in_loops_and_comprehensions_are_fine_when_built_from_what_goes_round(project: Project):
    body = """\
        for item in items:
            key = item.lower()
            await wf.stage(f"fix@{key}", lambda: None)
            await wf.stage(f"Fix {item}", lambda: None)
        started = [wf.stage(f"x@{item}", lambda: None) for item in items]
        STAGE = "plan"
        await wf.stage(STAGE, lambda: None)
    """
    assert _check(project, body) == [(10, "bad-name"), (11, "not-awaited"), (13, "computed-name")]


def test_a_variable_set_again_from_the_stage_is_not_read_unset(project: Project):
    body = """\
        branch = ""
        async def plan():
            nonlocal branch
            branch = "feat"
            return branch
        branch = await wf.stage("plan", plan, result=str)
        return branch
    """
    assert _check(project, body) == []


def test_clock_and_randomness_are_found_through_from_imports_and_named_functions(project: Project):
    text = """\
        from uuid import uuid4

        import awf


        def new_id(args):
            return str(uuid4())


        @awf.workflow(name="w", description="w", version="1.0.0", id=new_id)
        async def w(wf: awf.Context):
            await wf.stage("a", lambda: None)
        """
    assert _found(project, "w.py", textwrap.dedent(text))[1] == [(7, "not-repeatable")]
