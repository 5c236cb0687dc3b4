"""`awf answer`: an agent gives its answer to the turn awf is waiting on.

Exit codes: 0 the answer was taken; 1 it was not, as written (not JSON, or it does not fit the
turn's schema): every problem is printed, and the agent fixes them and runs it again; 2 there
is no turn it may answer (no channel in its environment, another agent's turn, a turn that has
settled already) or a usage error.
"""

from __future__ import annotations

import os
import sys

from . import output


def answer_command(*, value: str | None, blocked: str | None, turn: int | None, argv: list[str] | None) -> int:
    from ..agents.answering import Refused, Rejected, answer

    if argv:
        if value is not None or len(argv) > 1:
            output.error("awf answer takes one answer: quote the JSON as one argument, or pipe it in on stdin")
            return 2
        value = argv[0]
    if value is not None and blocked is not None:
        output.error("give an answer or --blocked REASON, not both")
        return 2
    if value is None and blocked is None:
        if sys.stdin is None or sys.stdin.isatty():
            output.error("give the answer as an argument (awf answer '{...}') or on stdin (awf answer < answer.json)")
            return 2
        value = sys.stdin.read()
    try:
        taken = answer(os.environ, value, blocked=blocked, turn=turn)
    except Refused as refused:
        output.error(str(refused))
        return 2
    except Rejected as rejected:
        count = len(rejected.problems)
        lines = [f"the answer was not taken: {count} problem{'s' if count > 1 else ''}; the turn is still open"]
        lines += [f"  - {problem}" for problem in rejected.problems]
        lines.append("Fix the answer so it fits the JSON Schema in your prompt, and run awf answer again.")
        output.error("\n".join(lines))
        return 1
    what = "answer" if taken.outcome == "answered" else "blocked"
    output.result(f"{what} taken: turn {taken.turn} of agent {taken.agent} in run {taken.run}")
    return 0
