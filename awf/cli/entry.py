"""The `awf` console script. Fast paths first: `awf --version` imports nothing it does not need."""

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
    from .app import run_app

    raise SystemExit(run_app(words, passthrough))
