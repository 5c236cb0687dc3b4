"""Memory: the peak resident memory of `awf run` and `awf run --continue` on the headline run, and
of `awf runs` over many runs, beside `python -c pass`.

The many runs are made fast: two real runs (one completed, one stopped) are made by `awf run`,
and their folders are written out again under new ids, file by file, without fsync. What
`awf runs` reads is then exactly the record's format, as the real awf wrote it.
"""

from __future__ import annotations

import os
from pathlib import Path

from .continuing import continue_runs
from .harness import Figure, Goal, Series, combine, filled, rounds, run_timed
from .session import WORKFLOW, Session
from .stage_overhead import stage_runs
from .startup import has_runs_command, startup_runs

FAMILY = "memory"
UNDER_60_MB = Goal("< 60 MB", below=60 * 1024 * 1024)
MODELS = ("model0completed", "model0stopped")  # ids that occur nowhere else in the files


def make_runs(session: Session, count: int) -> Path:
    """A run root holding `count` runs of the generated workflow, half completed, half stopped."""

    def make() -> Path:
        models = session.scratch("model-runs")
        session.awf_run(3, models, run_id=MODELS[0])
        session.awf_run(3, models, run_id=MODELS[1], stop_at=2)
        files = {
            model: {
                path.relative_to(models / WORKFLOW / model): path.read_bytes()
                for path in (models / WORKFLOW / model).rglob("*")
                if path.is_file()
            }
            for model in MODELS
        }
        root = session.scratch(f"runs-{count}")
        for index in range(count):
            model = MODELS[index % 2]
            run_id = f"run-{index:05d}"
            folder = root / WORKFLOW / run_id
            for relative, data in files[model].items():
                target = folder / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data.replace(model.encode(), run_id.encode()))
        os.sync()
        return root

    return session.once(("many-runs", count), make)


def listing_runs(session: Session) -> Series | None:
    """The Timed of `awf runs` over the many runs, or None when this awf has no such command."""
    if not has_runs_command(session):
        return None

    def take() -> Series:
        root = make_runs(session, session.config.runs)
        command = [*session.awf, "runs", "--run-root", str(root)]
        return rounds(
            session.config.repeats,
            {
                "runs": lambda: run_timed(command, cwd=session.project, env=session.env),
            },
        )["runs"]

    return session.once("listing", take)


def peak(series: Series) -> Series:
    return combine(lambda timed: timed.peak_rss, series)


def figures(session: Session) -> list[Figure]:
    size, count = session.config.stages, session.config.runs
    listing = Figure("memory.runs", FAMILY, f"awf runs, over {count:,} runs", unit="bytes", baseline="memory.pass")
    samples = listing_runs(session)
    if samples is None:
        listing.skipped = "this awf has no `awf runs` command yet"
    else:
        filled(listing, peak(samples))
    return [
        filled(Figure("memory.pass", FAMILY, "python -c pass", unit="bytes"), peak(startup_runs(session)["pass"])),
        filled(
            Figure(
                "memory.run",
                FAMILY,
                f"awf run, {size:,} stages",
                unit="bytes",
                baseline="memory.pass",
                goal=UNDER_60_MB,
            ),
            peak(stage_runs(session, size, with_peers=True)["awf"]),
        ),
        filled(
            Figure(
                "memory.continue",
                FAMILY,
                f"awf run --continue, {size:,} stages",
                unit="bytes",
                baseline="memory.pass",
                goal=UNDER_60_MB,
            ),
            peak(continue_runs(session, size)["continue"]),
        ),
        listing,
    ]
