"""The `awf` console script. Fast paths first: `awf --version` imports nothing it does not need,
and `awf runs` with no options but `--json`, `--cwd` and `--run-root` is answered without the
option parser, whose import alone costs more than the listing of an empty run root."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    words = list(sys.argv[1:] if argv is None else argv)
    if words in (["--version"], ["-V"]):
        from .. import __version__

        print(f"awf {__version__}")
        raise SystemExit(0)
    # The workflow's own arguments follow `--`; awf keeps them away from its option parser.
    passthrough: list[str] | None = None
    if "--" in words:
        cut = words.index("--")
        words, passthrough = words[:cut], words[cut + 1 :]
    if words[:1] != ["answer"]:  # an agent's command, in the agent's terminal: nothing of awf's view
        show_cursor()
    plain = _plain_runs(words) if passthrough is None else None
    if plain is not None:
        raise SystemExit(_runs(*plain))
    from .app import run_app

    raise SystemExit(run_app(words, passthrough))


def show_cursor() -> None:
    """Show the terminal's cursor: a live view ended by kill -9 leaves it hidden, and the next awf
    command that draws on that terminal brings it back."""
    import os

    if os.environ.get("TERM", "") == "dumb":
        return
    for stream in (sys.stderr, sys.stdout):
        try:
            if stream is not None and stream.isatty():
                stream.write("\x1b[?25h")
                stream.flush()
                return
        except (OSError, ValueError):
            continue


# The options `awf runs` takes a folder with, as `--cwd DIR` or `--cwd=DIR`.
_FOLDERS = ("--cwd", "--run-root")


def _plain_runs(words: list[str]) -> tuple[str | None, bool, dict[str, str]] | None:
    """`awf runs [--json] [--cwd DIR] [--run-root DIR] [WORKFLOW[/ID]]`: its target, --json and
    folders; None for anything else (another option, help, a second argument, an option given
    twice), which the option parser answers as usual."""
    if words[:1] != ["runs"]:
        return None
    target: str | None = None
    json_out = False
    folders: dict[str, str] = {}
    rest = iter(words[1:])
    for word in rest:
        name, equals, value = word.partition("=")
        if word == "--json" and not json_out:
            json_out = True
        elif name in _FOLDERS and name not in folders:
            given = value if equals else next(rest, None)
            if given is None or given.startswith("-"):
                return None
            folders[name] = given
        elif word.startswith("-") or target is not None:
            return None
        else:
            target = word
    return target, json_out, folders


def _runs(target: str | None, json_out: bool, folders: dict[str, str]) -> int:
    from pathlib import Path

    from .errors import ExitCode, handled, report
    from .runs_command import runs_command

    cwd, run_root = (Path(folders[name]) if name in folders else None for name in _FOLDERS)
    try:
        return runs_command(target=target, statuses=None, json_out=json_out, cwd=cwd, run_root=run_root)
    except handled() as problem:
        return report(problem, json_out=json_out)
    except KeyboardInterrupt:
        print(file=sys.stderr)  # as the option parser does: the next prompt starts on a line of its own
        return ExitCode.INTERRUPTED
