"""Where awf writes: results on stdout, everything else on stderr, its own errors prefixed."""

from __future__ import annotations

import sys


def error(message: str) -> None:
    """An error of awf's own: `awf: ` and one or two lines that say what to do."""
    lines = str(message).splitlines() or [""]
    try:
        print(f"awf: {lines[0]}", file=sys.stderr)
        for line in lines[1:]:
            print(line, file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def result(text: str) -> None:
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def usage(text: str) -> None:
    """Help shown because a command was incomplete: stderr, unprefixed."""
    try:
        print(text, file=sys.stderr)
    except (OSError, ValueError):
        pass


def error_line(text: str) -> None:
    """A line for a person on stderr that is not an error of awf's (a log line, a notice)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
