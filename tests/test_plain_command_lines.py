"""A plain `awf run` or `awf runs` is answered without the option parser (cli/plain.py): its table must say what
cli/app.py says of each option, and its answers must be the parser's own, word for word."""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
import sys

import pytest
import typer
from conftest import Project, Result
from reading_runs import run, write_steps
from test_runs_command import timeless

from awf.cli import app as cli_app
from awf.cli.plain import COMMANDS, read
from awf.cli.run_command import run_command
from awf.cli.runs_command import runs_command

# The option parser's answer, asked without the console script's fast paths; words after -- are
# the workflow's, as the console script hands them over.
THROUGH_THE_PARSER = (
    "import sys; from awf.cli.app import run_app; words = sys.argv[1:]; "
    "cut = words.index('--') if '--' in words else len(words); "
    "sys.exit(run_app(words[:cut], words[cut + 1 :] if '--' in words else None))"
)


def parsed(project: Project, *words: str) -> Result:
    """What the option parser answers to `awf WORDS`, asked without the console script's fast paths."""
    done = subprocess.run(
        [sys.executable, "-c", THROUGH_THE_PARSER, *words],
        cwd=project.path,
        env=project.env,
        capture_output=True,
        text=True,
    )
    return Result(done.returncode, done.stdout, done.stderr)


def steady(text: str, project: Project) -> str:
    """`text` without what differs between two projects and two moments: the project's folder, and
    every duration and age (850ms ago, 1.2s ago)."""
    return timeless(re.sub(r"\S+ ago", "AGO", text.replace(str(project.path), "P")))


def click_command(name: str):
    return typer.main.get_command(cli_app.app).commands[name]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_option_the_table_reads_is_the_option_the_parser_defines(name: str):
    plain = COMMANDS[name]
    params = click_command(name).params
    options = {opt: param for param in params if param.param_type_name == "option" for opt in param.opts}
    arguments = [param.name for param in params if param.param_type_name == "argument"]
    assert list(plain.arguments) == arguments
    assert plain.required == sum(param.required for param in params if param.param_type_name == "argument")
    kinds = ((plain.values, False, False), (plain.repeats, False, True), (plain.flags, True, False))
    for table, flag, multiple in kinds:
        for opt, parameter in table.items():
            defined = options[opt]
            assert (defined.name, defined.is_flag, defined.multiple) == (parameter, flag, multiple), opt
            assert (defined.type.name == "path") == (parameter in plain.paths), opt
            # Nothing the parser would add that the table cannot: a value from the environment, a callback.
            assert defined.envvar is None and defined.callback is None, opt
            assert flag or defined.type.name in ("text", "str", "path"), opt  # values the table passes as given
    # What the parser leaves for itself: options of other kinds, and none the table forgot.
    read_here = {*plain.values, *plain.repeats, *plain.flags}
    left = {opt for opt in options if opt not in read_here and opt not in ("--help", "-h")}
    assert all(options[opt].type.name not in ("text", "str", "path", "boolean") for opt in left), left


def test_the_commands_take_their_options_by_the_names_the_parser_gives_them():
    # cli/app.py hands `run` its options as locals(): the names must be run_command's.
    assert set(inspect.signature(cli_app.run).parameters) == set(inspect.signature(run_command).parameters) - {"argv"}
    assert set(inspect.signature(cli_app.runs).parameters) == set(inspect.signature(runs_command).parameters)


def test_what_the_table_leaves_to_the_parser():
    assert read(["run", "w.py", "--id", "a"], None) == ("run", {"file": "w.py", "run_id": "a"})
    assert read(["run", "w.py", "--skip-stage=a", "--skip-stage", "b"], ["x"]) == (
        "run",
        {"file": "w.py", "skip_stage": ["a", "b"]},
    )
    for words in (
        ["run"],
        ["run", "w.py", "v.py"],
        ["run", "w.py", "--id"],
        ["run", "w.py", "--id", "a", "--id", "b"],
        ["run", "w.py", "--id", "--continue"],
        ["run", "w.py", "--continue=yes"],
        ["run", "w.py", "--continue", "--continue"],
        ["run", "w.py", "--priority", "2"],
        ["run", "w.py", "--help"],
        ["run", "-"],
        ["runs", "--json", "-h"],
        ["logs", "w/a"],
        [],
    ):
        assert read(words, None) is None, words
    assert read(["runs"], ["x"]) is None  # runs takes no workflow arguments: the parser says so


def test_a_plain_run_answers_as_the_parser_does_and_imports_none_of_it(tmp_path):
    """Each command line twice, in two copies of one project: once through the console script,
    once through the parser. Their exit codes, stdout and stderr must not differ."""
    asked = [
        ["steps.py", "--id", "a", "--", "complete"],
        ["steps.py", "--id=b", "--json", "--no-color", "--no-check", "--", "stop"],
        ["steps.py", "--id", "b", "--continue", "--json", "--", "stop"],
        ["steps.py", "--id", "a", "--continue"],
        ["steps.py", "--id", "c", "--plan"],
        ["steps.py", "--id", "d", "--values", "nowhere.json", "--from-stage", "build"],
        ["steps.py", "--id", "e", "--skip-stage", "plan", "--skip-stage", "plan"],
        ["steps.py", "--id", "f", "--timeout", "soon"],
        ["steps.py", "--id", "g", "--on", "mars", "--json"],
        ["steps.py", "--id", "h", "--only-stage", "plan", "--to-stage", "build"],
        ["steps.py", "--id", "i", "--end-leftovers", "--ignore-leftovers"],
        ["steps.py", "--id", "j", "--priority", "3"],  # to the parser, both ways
        ["nowhere.py", "--json"],
        ["../steps.py:nope"],
        ["steps.py", "--id", "k", "--id", "l"],
        ["steps.py", "--id"],
        ["steps.py", "--continue=yes"],
        ["steps.py", "x", "y"],
        [],
    ]
    fast, slow = Project(tmp_path / "fast"), Project(tmp_path / "slow")
    for project in (fast, slow):
        project.path.mkdir()
        write_steps(project)
    for words in asked:
        answers = [
            (result.code, steady(result.stdout, project), steady(result.stderr, project))
            for result, project in ((fast.awf("run", *words), fast), (parsed(slow, "run", *words), slow))
        ]
        assert answers[0] == answers[1], words
    assert fast.awf("run", "steps.py", "--id", "a", "--continue").code == 2
    shutil.rmtree(fast.path / ".awf")
    timed, imported = fast.awf_imports("run", "steps.py", "--id", "z")
    assert timed.code == 0, timed.stderr
    assert not imported & {"typer", "click"}


def test_runs_without_the_option_parser_answers_as_the_parser_does_and_imports_none_of_it(project: Project, tmp_path):
    """`awf runs [--json] [--status S]... [--cwd DIR] [--run-root DIR] [WORKFLOW[/ID]]` skips typer
    (cli/plain.py); what it prints and exits must not differ from the parser's answer, and anything
    else goes to the parser."""
    write_steps(project)
    assert run(project, "done", "complete").code == 0
    assert run(project, "stopped", "stop").code == 3
    (project.path / ".awf" / "runs" / "steps" / "stopped" / "run.jsonl").write_text("{not json\n")
    root = str(project.path / ".awf" / "runs")
    asked = [
        [],
        ["--json"],
        ["steps"],
        ["steps/done"],
        ["--json", "steps/done"],
        ["steps/stopped"],
        ["steps/nope", "--json"],
        ["../etc/x"],
        ["nothing"],
        ["--cwd", str(project.path), "steps/done"],
        [f"--run-root={root}", "--json"],
        ["--run-root", str(tmp_path / "empty")],
        ["--cwd", str(tmp_path / "nowhere"), "--json"],
        ["--status", "stopped"],  # a repeatable option
        ["--status", "failed,stopped", "--status=completed", "--json"],
        ["--status", "lost"],
        ["steps/done", "--status", "completed"],
        ["--json", "--json"],
        ["--cwd"],
        ["a", "b"],
    ]
    for words in asked:
        answers = [
            (result.code, timeless(result.stdout), result.stderr)
            for result in (project.awf("runs", *words), parsed(project, "runs", *words))
        ]
        assert answers[0] == answers[1], words
    codes = {tuple(words): project.awf("runs", *words).code for words in asked}
    assert codes[("steps/done",)] == 0 and codes[("steps/stopped",)] == 3 and codes[("../etc/x",)] == 2
    assert codes[("--cwd",)] == 2 and codes[("a", "b")] == 2
    for words in (["runs"], ["runs", "--run-root", str(tmp_path / "empty")]):
        timed, imported = project.awf_imports(*words)
        assert timed.code in (0, 3), timed.stderr
        assert not imported & {"typer", "click"}, words
