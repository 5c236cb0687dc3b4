"""Command lines plain enough to answer without the option parser.

Importing typer costs more than listing an empty run root, and about 20 ms of an attempt's
start. `awf run` and `awf runs` given only options of the kinds below are read here and handed
to their command's function under the same parameter names typer would use; anything else (help,
an option this table leaves out, a value that looks like an option, an option given twice, a
missing or extra argument) is left to the parser, which answers it as always. The tests hold
both paths to the same answer, and each entry here to its option in cli/app.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

# A command's parameters as read: text, a path, a flag given, or a repeated option's values.
Given = dict[str, str | Path | bool | list[str | Path]]


class Plain(NamedTuple):
    """One command's plain form: its arguments and the options it is read with."""

    arguments: tuple[str, ...]  # the parameters its positional arguments fill, in order
    required: int  # how many of them must be given
    values: Mapping[str, str]  # an option that takes a value → its parameter
    repeats: Mapping[str, str]  # an option that may be given again, its values a list → its parameter
    flags: Mapping[str, str]  # a flag → its parameter
    paths: frozenset[str] = frozenset()  # the parameters whose values are paths
    passthrough: bool = False  # it takes the workflow's own arguments, after --


COMMANDS: dict[str, Plain] = {
    "runs": Plain(
        arguments=("target",),
        required=0,
        values={"--cwd": "cwd", "--run-root": "run_root"},
        repeats={"--status": "status"},
        flags={"--json": "json_out"},
        paths=frozenset({"cwd", "run_root"}),
    ),
    "run": Plain(
        arguments=("file",),
        required=1,
        values={
            "--id": "run_id",
            "--from-stage": "from_stage",
            "--to-stage": "to_stage",
            "--only-stage": "only_stage",
            "--values": "values",
            "--timeout": "timeout",
            "--max-cost": "max_cost",
            "--cwd": "cwd",
            "--sandbox": "sandbox",
            "--run-root": "run_root",
            "--base": "base",
            "--on": "on",
            "--ray-address": "ray_address",
            "--ray-resources": "ray_resources",
            "--max-agents": "max_agents",
        },
        repeats={"--skip-stage": "skip_stage"},
        flags={
            "--continue": "resume",
            "--worktree": "worktree",
            "--share-folder": "share_folder",
            "--json": "json_out",
            "--no-color": "no_color",
            "--plan": "preview",
            "--end-leftovers": "end_leftovers",
            "--ignore-leftovers": "ignore_leftovers",
            "--wait": "wait",
            "--no-check": "no_check",
            "--queue": "queue",
        },
        paths=frozenset({"values", "cwd", "run_root"}),
        passthrough=True,
    ),
}


def read(words: list[str], passthrough: list[str] | None) -> tuple[str, Given] | None:
    """The command `words` name and its parameters, or None when the option parser must read them."""
    plain = COMMANDS.get(words[0]) if words else None
    if plain is None or (passthrough is not None and not plain.passthrough):
        return None
    given: Given = {}
    arguments = iter(plain.arguments)
    rest = iter(words[1:])
    for word in rest:
        name, equals, value = word.partition("=")
        if name in plain.values or name in plain.repeats:
            parameter = plain.values.get(name) or plain.repeats[name]
            text = value if equals else next(rest, None)
            if text is None or text.startswith("-") or (parameter in given and name in plain.values):
                return None
            shown = Path(text) if parameter in plain.paths else text
            if name in plain.repeats:
                values = given.setdefault(parameter, [])
                assert isinstance(values, list)
                values.append(shown)
            else:
                given[parameter] = shown
        elif word in plain.flags and plain.flags[word] not in given:
            given[plain.flags[word]] = True
        elif word.startswith("-"):
            return None
        else:
            argument = next(arguments, None)
            if argument is None:
                return None
            given[argument] = word
    if sum(name in given for name in plain.arguments) < plain.required:
        return None
    return words[0], given


def answer(command: str, given: Given, passthrough: list[str] | None) -> int:
    """Run `command` with the parameters `read` found, as the option parser would have: its exit
    code, its errors reported as every command's are."""
    import sys

    from .errors import ExitCode, handled, report

    try:
        return _function(command)(**given, **({"argv": passthrough} if COMMANDS[command].passthrough else {}))
    except handled() as problem:
        return report(problem, json_out=bool(given.get("json_out")))
    except KeyboardInterrupt:
        print(file=sys.stderr)  # as the option parser does: the next prompt starts on a line of its own
        return ExitCode.INTERRUPTED


def _function(command: str) -> Callable[..., int]:
    if command == "run":
        from .run_command import run_command

        return run_command
    from .runs_command import runs_command

    return runs_command
