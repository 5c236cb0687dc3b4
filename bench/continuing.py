"""Continue: a run of N stages whose first N-1 are recorded, finished by `awf run --continue`.

The cost of a reused stage is the continue less `awf --version` (the price of starting Python and
awf at all), measured in the same rounds, over the N-1 stages it reused. The peers resume the same
way they would after a crash just before the last step: DBOS recovers the pending workflow when
it launches, LangGraph is invoked again on the same thread. They time the replay from inside
their process, so they are set beside awf's marginal cost a reused stage, which leaves out every
fixed cost just as theirs does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from . import peers
from .harness import BenchError, Figure, Goal, Series, combine, filled, rounds
from .session import Session

FAMILY = "continue"
UNDER_50_US = Goal("< 50 µs", below=50e-6)


def template(session: Session, size: int) -> Path:
    """A run root holding one run of `size` stages, stopped before its last: made once by the real awf."""

    def make() -> Path:
        root = session.scratch(f"stopped-{size}")
        session.awf_run(size, root, stop_at=size - 1)
        return root

    return session.once(("template", size), make)


def continue_runs(session: Session, size: int) -> dict[str, Series]:
    """`continue` and `version`: the Timed of each, round by round; taken once a session."""

    def take() -> dict[str, Series]:
        source = template(session, size)
        copies: list[Path] = []

        def resume():
            copies.append(session.work / f"continue-{size}-{len(copies)}")
            shutil.copytree(source, copies[-1])
            return session.awf_run(size, copies[-1], resume=True)

        results = rounds(session.config.repeats_at(size), {"continue": resume, "version": session.awf_version})
        for copy in copies:
            session.discard(copy)
        return results

    return session.once(("continue", size), take)


def per_reused(samples: dict[str, Series], size: int) -> Series:
    return combine(
        lambda cont, version: (cont.seconds - version.seconds) / (size - 1), samples["continue"], samples["version"]
    )


def marginal(session: Session, small: int, large: int) -> Series:
    """What one more reused stage adds to a continue, from continues of two sizes."""
    a, b = continue_runs(session, small)["continue"], continue_runs(session, large)["continue"]
    if not isinstance(a, BenchError) and not isinstance(b, BenchError):
        a, b = a[: len(b)], b[: len(a)]  # the larger size may have fewer samples: pair the first ones
    return combine(lambda x, y: (y.seconds - x.seconds) / (large - small), a, b)


def peer_resume(session: Session, peer: str, size: int) -> Series:
    def take() -> Series:
        crashed = session.scratch(f"{peer}-crashed")
        try:
            peers.measure(peer, "crash", size, crashed / "db.sqlite")
        except BenchError as problem:
            return problem
        copies: list[Path] = []

        def resume() -> float:
            copies.append(session.scratch(f"{peer}-resume"))
            for file in crashed.iterdir():  # the database and its journal or WAL, as the crash left them
                shutil.copy2(file, copies[-1] / file.name)
            return peers.measure(peer, "resume", size, copies[-1] / "db.sqlite")["seconds"] / (size - 1)

        results = rounds(session.config.repeats_at(size), {"resume": resume})["resume"]
        for folder in [crashed, *copies]:
            session.discard(folder)
        return results

    return session.once(("peer-resume", peer, size), take)


def figures(session: Session) -> list[Figure]:
    size = session.config.stages
    small = max(2, size // 10)
    samples = continue_runs(session, size)
    rows = [
        filled(
            Figure("continue.version", FAMILY, "awf --version (in the same rounds)", short="awf --version"),
            combine(lambda t: t.seconds, samples["version"]),
        ),
        filled(
            Figure(
                "continue.whole",
                FAMILY,
                f"awf run --continue, {size - 1:,} of {size:,} stages recorded",
                baseline="continue.version",
            ),
            combine(lambda t: t.seconds, samples["continue"]),
        ),
        filled(
            Figure(
                "continue.per-reused",
                FAMILY,
                "awf, per reused stage: (continue − --version) / reused",
                goal=UNDER_50_US,
                baseline="stages.floor",
            ),
            per_reused(samples, size),
        ),
        filled(
            Figure(
                "continue.marginal",
                FAMILY,
                f"awf, marginal per reused stage ({small:,} → {size:,} stages)",
                goal=UNDER_50_US,
                baseline="stages.floor",
                short="awf's marginal per reused stage",
            ),
            marginal(session, small, size),
        ),
    ]
    for peer, (name, _) in peers.PEERS.items():
        figure = Figure(
            f"continue.{peer}", FAMILY, f"{name}, resume, per reused step (in-process)", baseline="continue.marginal"
        )
        why = peers.missing(peer)
        if why:
            figure.skipped = why
        else:
            filled(figure, peer_resume(session, peer, size))
        rows.append(figure)
    return rows
