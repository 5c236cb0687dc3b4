"""Before and after: this awf beside another installation of it, in one run.

`python -m bench --against OTHER/bin/awf` measures the headline commands with both, in rounds
that interleave them, and sets each figure of this awf beside the other's. The figures are CPU
time (user and system) of the command and its children, the part of a command that code
changes move: a wall time would add the disk's fsyncs, which are the same for both and vary
from one sample to the next. Each awf continues a run it stopped itself; the many runs listed are
made by this awf and copied for each, and listed with nothing kept.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from .harness import Figure, Series, Timed, combine, filled, rounds, run_timed
from .reading import make_runs
from .session import Session

FAMILY = "before/after"


def figures(session: Session) -> list[Figure]:
    if session.against is None:
        return []
    sides = {"before": session.against, "after": session.awf}
    size = session.config.stages
    empty = session.scratch("against-empty")
    listing = make_runs(session.scratch("against-listing"), session.config.runs)
    roots = {side: session.scratch(f"against-{side}-listing") for side in sides}
    for root in roots.values():
        shutil.copytree(listing, root, dirs_exist_ok=True)
    templates = {side: _stopped(session, command, size) for side, command in sides.items()}
    measures: dict[str, tuple[str, Callable[[list[str], str], Timed]]] = {
        "runs-empty": ("awf runs, on an empty run root", lambda awf, side: _runs(session, awf, empty)),
        "no-stages": ("an attempt of no stages", lambda awf, side: _attempt(session, awf, 0)),
        "stages": (f"an attempt of {size:,} stages", lambda awf, side: _attempt(session, awf, size)),
        "continue": (
            f"a continue, {size - 1:,} of {size:,} stages reused",
            lambda awf, side: _continue(session, awf, templates[side], size),
        ),
        "listing": (
            f"awf runs over {session.config.runs:,} runs, nothing kept",
            lambda awf, side: _runs(session, awf, roots[side], cold=True),
        ),
    }
    contenders = {
        f"{key}.{side}": (lambda run=run, awf=awf, side=side: run(awf, side))
        for key, (_, run) in measures.items()
        for side, awf in sides.items()
    }
    samples = rounds(session.config.startup_repeats, contenders)
    shown: list[Figure] = []
    for key, (label, _) in measures.items():
        before = Figure(f"against.{key}.before", FAMILY, f"{label}: before, CPU", short="before")
        after = Figure(f"against.{key}.after", FAMILY, f"{label}: this awf, CPU", baseline=before.key)
        shown += [filled(before, _cpu(samples[f"{key}.before"])), filled(after, _cpu(samples[f"{key}.after"]))]
    return shown


def _cpu(series: Series) -> Series:
    return combine(lambda timed: timed.cpu, series)


def _runs(session: Session, awf: list[str], root: Path, *, cold: bool = False) -> Timed:
    if cold:
        shutil.rmtree(root / ".cache", ignore_errors=True)
    return run_timed([*awf, "runs", "--run-root", str(root)], cwd=session.project, env=session.env)


def _attempt(session: Session, awf: list[str], size: int) -> Timed:
    root = session.scratch("against-run")
    try:
        return session.awf_run(size, root, awf=awf)
    finally:
        session.discard(root)


def _stopped(session: Session, awf: list[str], size: int) -> Path:
    """A run root holding a run of `size` stages stopped before its last, made by `awf`."""
    root = session.scratch("against-stopped")
    session.awf_run(size, root, stop_at=size - 1, awf=awf)
    return root


def _continue(session: Session, awf: list[str], template: Path, size: int) -> Timed:
    copy = session.scratch("against-continue")
    shutil.copytree(template, copy, dirs_exist_ok=True)
    try:
        return session.awf_run(size, copy, resume=True, awf=awf)
    finally:
        session.discard(copy)
