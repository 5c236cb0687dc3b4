"""`awf --help` reads whole at 80 columns, and docs/cli.md's synopsis is the commands' own."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import Project

from awf.cli.app import app
from awf.cli.reference import with_synopsis

PAGE = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def test_the_cli_page_synopsis_is_made_from_the_commands_so_it_cannot_drift():
    page = PAGE.read_text()
    assert with_synopsis(page) == page, "docs/cli.md is stale: run python -m awf.cli.reference --write"


def test_help_shows_each_commands_summary_whole_on_one_line_at_80_columns(project: Project):
    shown = project.awf("--help", env={"COLUMNS": "80"})
    assert shown.code == 0
    commands = shown.stdout.split("Commands:\n", 1)[1].splitlines()
    assert len(commands) == len(app.registered_commands)
    for line in commands:
        assert len(line) <= 80 and not line.rstrip().endswith("..."), line
        name, summary = line.split(maxsplit=1)
        own = project.awf(name, "--help", env={"COLUMNS": "80"}).stdout
        assert summary in own  # the command's own first line, not a cut of it


def test_metavars_read_the_same_way_in_every_command(project: Project):
    seen: dict[str, set[str]] = {}
    for name in ("run", "runs", "logs", "watch", "send", "wake", "serve", "attach", "answer"):
        text = project.awf(name, "--help", env={"COLUMNS": "200"}).stdout
        for option, metavar in re.findall(r"^\s+(--[a-z-]+) ([A-Z][A-Z_/\[\]:]*|<\w+>)", text, re.M):
            seen.setdefault(option, set()).add(metavar)
    assert not [metavar for metavars in seen.values() for metavar in metavars if metavar.startswith("<")]
    assert seen["--id"] == {"ID"} and seen["--event-id"] == {"ID"}
    assert seen["--from-stage"] == {"STAGE"} and seen["--stage"] == {"STAGE"}
    assert seen["--cwd"] == {"DIR"} and seen["--run-root"] == {"DIR"}
    assert seen["--values"] == {"FILE"} and seen["--data-file"] == {"FILE"}
    assert seen["--timeout"] == {"DURATION"}
