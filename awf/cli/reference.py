"""docs/cli.md's synopsis, made from the commands' own parameters, so the page cannot drift from --help.

`python -m awf.cli.reference` prints it; `--write` puts it into docs/cli.md, between its markers.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

BEGIN = "<!-- synopsis: made by python -m awf.cli.reference --write -->"
END = "<!-- end of synopsis -->"
WIDTH = 100


def _command_words(name: str, command: Any, context: Any) -> list[str]:
    words = ["awf", name]
    for param in command.params:
        if param.param_type_name == "argument":
            words.append(param.make_metavar(context))
            continue
        if "--help" in param.opts:
            continue
        option = max(param.opts, key=len)
        if param.is_flag:
            words.append(f"[{option}]")
        else:
            many = "…" if getattr(param, "multiple", False) else ""
            words.append(f"[{option} {param.metavar or param.name.upper()}{many}]")
    if name == "run":
        words.append("[-- ARGS…]")
    return words


def synopsis() -> str:
    """One entry a command, each option with its metavar, as `--help` lists them."""
    import typer

    from .app import app

    try:
        from typer import _click as click  # type: ignore[attr-defined,unused-ignore]
    except ImportError:  # pragma: no cover - depends on the installed typer
        import click  # type: ignore[no-redef,import-not-found,unused-ignore]

    group: Any = typer.main.get_command(app)
    lines: list[str] = []
    for name, command in group.commands.items():
        context = click.Context(command, info_name=name)
        words = _command_words(name, command, context)
        head = " ".join(words[:2])
        lines += textwrap.wrap(
            " ".join(words),
            WIDTH,
            subsequent_indent=" " * (len(head) + 1),
            break_long_words=False,
            break_on_hyphens=False,
        )
    lines.append("awf --version")
    return "```\n" + "\n".join(lines) + "\n```"


def with_synopsis(page: str) -> str:
    """The page with its synopsis made anew."""
    before, _, rest = page.partition(BEGIN)
    _, _, after = rest.partition(END)
    return f"{before}{BEGIN}\n{synopsis()}\n{END}{after}"


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        page = Path(__file__).resolve().parent.parent.parent / "docs" / "cli.md"
        page.write_text(with_synopsis(page.read_text()))
        return 0
    print(synopsis())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
