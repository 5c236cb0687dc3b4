"""The `awf` console script. Fast paths first: `awf --version` imports nothing it does not need,
and a plain `awf run` or `awf runs` (cli/plain.py) is answered without the option parser, whose
import alone costs more than the listing of an empty run root."""

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
    from . import plain

    read = plain.read(words, passthrough)
    if read is not None:
        raise SystemExit(plain.answer(*read, passthrough))
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
