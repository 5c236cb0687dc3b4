"""Start-up: how long awf takes to answer when it has nothing to do, beside `python -c pass`.

A read-only command should pay for Python and for what it reads, not for importing the engine,
the agents or the progress view it does not use.
"""

from __future__ import annotations

import sys

from .harness import Figure, Goal, Series, combine, filled, rounds, run_timed
from .session import Session

FAMILY = "start-up"
WITHIN_4X = Goal("≤ 4× python -c pass", ratio=4.0)


# What an attempt imports that is not awf's own: the standard library's modules and the packages
# awf's modules import (its workflow is a coroutine on asyncio, its record JSON in files under a
# filelock, checked by fastjsonschema's validators). No attempt built on these starts faster.
FLOOR = (
    "import asyncio, typing, dataclasses, pathlib, json, datetime, shutil, hashlib, socket, filelock, fastjsonschema"
)


def has_runs_command(session: Session) -> bool:
    return (
        run_timed([*session.awf, "runs", "--help"], cwd=session.project, env=session.env, expect=range(256)).code == 0
    )


def startup_runs(session: Session) -> dict[str, Series]:
    """The Timed of each command, round by round; taken once a session."""

    def take() -> dict[str, Series]:
        empty = session.scratch("empty-root")
        python = sys.executable
        contenders = {
            "pass": lambda: run_timed([python, "-c", "pass"], cwd=session.project, env=session.env),
            "import": lambda: run_timed([python, "-c", "import awf"], cwd=session.project, env=session.env),
            "floor": lambda: run_timed([python, "-c", FLOOR], cwd=session.project, env=session.env),
            "version": session.awf_version,
        }
        if has_runs_command(session):
            contenders["runs"] = lambda: run_timed(
                [*session.awf, "runs", "--run-root", str(empty)], cwd=session.project, env=session.env
            )
        return rounds(session.config.startup_repeats, contenders)

    return session.once("startup", take)


def seconds(series: Series) -> Series:
    return combine(lambda timed: timed.seconds, series)


def figures(session: Session) -> list[Figure]:
    samples = startup_runs(session)
    runs = Figure("startup.runs", FAMILY, "awf runs, on an empty run root", baseline="startup.pass", goal=WITHIN_4X)
    if "runs" in samples:
        filled(runs, seconds(samples["runs"]))
    else:
        runs.skipped = "this awf has no `awf runs` command yet"
    return [
        filled(Figure("startup.pass", FAMILY, "python -c pass"), seconds(samples["pass"])),
        filled(
            Figure("startup.version", FAMILY, "awf --version", baseline="startup.pass", goal=WITHIN_4X),
            seconds(samples["version"]),
        ),
        runs,
        filled(
            Figure("startup.import", FAMILY, 'python -c "import awf"', baseline="startup.pass"),
            seconds(samples["import"]),
        ),
        filled(
            Figure(
                "startup.floor",
                FAMILY,
                'python -c "import asyncio, filelock, fastjsonschema, …": what an attempt imports, less awf',
                baseline="startup.pass",
                short="its imports less awf",
            ),
            seconds(samples["floor"]),
        ),
    ]
