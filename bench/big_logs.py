"""A big log: `awf runs WORKFLOW/ID`, `awf logs --after` its last cursor and a continue of one run
whose run.jsonl holds `big_log_lines` stage and turn lines (100,000 lines, about 100 MB).

Each is set beside a Python that reads the same log whole and splits it into lines, measured in
the same rounds: what a reader that held the log would cost at the least, in time and in memory.
A reader that streams should take a small part of its memory, and about its time or less.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from .big_log import BigRun, make_big_run
from .harness import Figure, Series, combine, filled, rounds, run_timed
from .session import Session

FAMILY = "big log"
WHOLE = "import sys; open(sys.argv[1], 'rb').read().splitlines()"


def big_run(session: Session) -> BigRun:
    """The stopped run with the big log, made once a session; each continue goes on from a copy."""
    return session.once("big-log", lambda: make_big_run(session.scratch("big-log"), session.awf, _lines(session)))


def _lines(session: Session) -> int:
    return session.config.big_log_lines


def measured(session: Session) -> dict[str, Series]:
    """The Timed of each command and of the whole read, round by round; taken once a session."""

    def take() -> dict[str, Series]:
        big = big_run(session)
        copies: list[Path] = []

        def go_on():
            copies.append(session.work / f"big-log-continue-{len(copies)}")
            shutil.copytree(big.project, copies[-1])
            (copies[-1] / "GO").touch()
            workflow_file = copies[-1] / big.workflow_file.name
            return run_timed(
                [*session.awf, "run", str(workflow_file), "--id", "r1", "--continue"], cwd=copies[-1], env=session.env
            )

        def awf(*argv: str):
            return lambda: run_timed([*session.awf, *argv], cwd=big.project, env=session.env)

        results = rounds(
            session.config.repeats,
            {
                "whole": lambda: run_timed([sys.executable, "-c", WHOLE, str(big.log)], cwd=big.project),
                "runs": awf("runs", big.name),
                "logs": awf("logs", big.name, "--after", str(big.last_cursor())),
                "continue": go_on,
            },
        )
        for copy in copies:
            session.discard(copy)
        return results

    return session.once("big-log-rounds", take)


def figures(session: Session) -> list[Figure]:
    samples = measured(session)
    size = f"{_lines(session):,} lines"
    labels = {
        "runs": f"awf runs WORKFLOW/ID, {size}",
        "logs": f"awf logs --after its last cursor, {size}",
        "continue": f"awf run --continue, {size}",
    }
    found = [
        filled(
            Figure("big.whole", FAMILY, f"read the log whole, {size}", short="whole read"),
            combine(lambda timed: timed.seconds, samples["whole"]),
        ),
        filled(
            Figure("big.whole.memory", FAMILY, f"read the log whole, {size}", unit="bytes", short="whole read"),
            combine(lambda timed: timed.peak_rss, samples["whole"]),
        ),
    ]
    for key, label in labels.items():
        found.append(
            filled(
                Figure(f"big.{key}", FAMILY, label, baseline="big.whole"), combine(lambda t: t.seconds, samples[key])
            )
        )
        found.append(
            filled(
                Figure(f"big.{key}.memory", FAMILY, label, unit="bytes", baseline="big.whole.memory"),
                combine(lambda timed: timed.peak_rss, samples[key]),
            )
        )
    return found
