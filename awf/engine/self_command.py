"""How awf starts another awf (a woken attempt, an attempt placed on a node): this interpreter,
`-P -m awf`.

-P keeps the folder it starts in off the import path: the run's working folder, which agents
write, could hold an `awf.py` (or a `json.py`) that would run unconfined in awf's place. The rest
of the environment is the operator's, as awf's own is.
"""

from __future__ import annotations

import sys


def awf_command() -> list[str]:
    """The words that run this awf in a process of its own."""
    return [sys.executable, "-P", "-m", "awf"]
