"""Agent start: what the reaper adds to each process of an agent with no sandbox.

awf starts every process of such an agent under the reaper (awf/agents/reaper.py), a Python of
its own that ends whatever the process leaves behind. Each figure starts `/bin/true` as awf
starts an agent's process (a session of its own, its streams on files) and waits for it to
exit: once as it is, once under the reaper; the difference is the reaper's cost per start.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence

from awf.agents.reaper import command_under_reaper

from .harness import Figure, Goal, combine, filled, rounds
from .session import Session

FAMILY = "agent start"
PROGRAM = ["/bin/true"]
# Small beside what an agent's CLI takes to start (claude, codex: a second or more).
UNDER_50_MS = Goal("< 50 ms", below=0.05)


def start_and_wait(command: Sequence[str], session: Session) -> Callable[[], float]:
    """A sample: seconds from starting `command` as ProcessBook.spawn does to its exit."""
    output = session.scratch("agent-start") / "out.txt"

    def take() -> float:
        with open(os.devnull, "rb") as given, open(output, "ab") as out:
            start = time.perf_counter()
            process = subprocess.Popen(
                list(command),
                cwd=session.project,
                env=session.env,
                stdin=given,
                stdout=out,
                stderr=out,
                start_new_session=True,
                close_fds=True,
            )
            process.wait()
            return time.perf_counter() - start

    return take


def figures(session: Session) -> list[Figure]:
    reaped = command_under_reaper(PROGRAM, session.env)
    # At least a hundred starts of each in a full pass: one start takes milliseconds.
    samples = rounds(
        session.config.startup_repeats * 5,
        {"bare": start_and_wait(PROGRAM, session), "reaped": start_and_wait(reaped, session)},
    )
    return [
        filled(
            Figure("agent.bare", FAMILY, "/bin/true, started as awf starts an agent", short="bare"), samples["bare"]
        ),
        filled(
            Figure("agent.reaped", FAMILY, "/bin/true under the reaper", baseline="agent.bare", goal=UNDER_50_MS),
            samples["reaped"],
        ),
        filled(
            Figure("agent.reaper", FAMILY, "the reaper's cost per start", goal=UNDER_50_MS),
            combine(lambda reaped, bare: reaped - bare, samples["reaped"], samples["bare"]),
        ),
    ]
