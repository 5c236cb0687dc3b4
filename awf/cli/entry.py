"""The `awf` console script. Fast paths first: `awf --version` imports nothing it does not need,
and `awf runs` with no options but `--json` is answered without the option parser, whose import
alone costs more than the listing of an empty run root."""

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


def _plain_runs(words: list[str]) -> tuple[str | None, bool] | None:
    """`awf runs [--json] [WORKFLOW[/ID]]`'s target and --json, or None for anything else (other
    options, help, a second argument), which the option parser answers as usual."""
    if words[:1] != ["runs"]:
        return None
    rest = words[1:]
    json_out = "--json" in rest
    targets = [word for word in rest if word != "--json"]
    if len(targets) > 1 or len(rest) - len(targets) > 1 or any(word.startswith("-") for word in targets):
        return None
    return (targets[0] if targets else None), json_out


def _runs(target: str | None, json_out: bool) -> int:
    from .errors import ExitCode, handled, report
    from .runs_command import runs_command

    try:
        return runs_command(target=target, statuses=None, json_out=json_out, cwd=None, run_root=None)
    except handled() as problem:
        return report(problem, json_out=json_out)
    except KeyboardInterrupt:
        print(file=sys.stderr)  # as the option parser does: the next prompt starts on a line of its own
        return ExitCode.INTERRUPTED
