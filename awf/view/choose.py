"""Which view an attempt's progress goes to, chosen before either is imported: the live block
costs its import only on a terminal."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from .lines import LineReporter
    from .live import LiveView


def on_terminal(stream: TextIO | None = None) -> bool:
    """Whether progress goes to a terminal that can redraw a block."""
    stream = stream or sys.stderr
    try:
        return stream.isatty() and os.environ.get("TERM", "") != "dumb"
    except (OSError, ValueError):
        return False


def choose_view(color: bool = True) -> LiveView | LineReporter:
    """The live block on a terminal; one plain line per change anywhere else."""
    if on_terminal():
        from .live import LiveView

        return LiveView(color=color)
    from .lines import LineReporter

    return LineReporter()
