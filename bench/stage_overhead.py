"""Stage overhead: what recording a stage costs, beside the floor and the peers.

awf's figure is the marginal cost of a stage through the real `awf run`: a run of N trivial
stages less a run of the same workflow with none (which pays the start-up and the attempt's own
files), over N. The floor is the same durable writes in a bare loop. The peers time their
workflow of N steps from inside their process.
"""

from __future__ import annotations

from typing import Any

from . import floor, peers
from .harness import Figure, Goal, Series, combine, filled, rounds
from .session import Session

FAMILY = "stage overhead"


def stage_runs(session: Session, size: int, *, with_peers: bool = False) -> dict[str, Series]:
    """Samples at `size` stages, taken once a session: `awf` and `empty` are the Timed of `awf run`s,
    `floor` and the peers are seconds for all `size` stages."""
    return session.once(("stages", size, with_peers), lambda: _take(session, size, with_peers))


def _take(session: Session, size: int, with_peers: bool) -> dict[str, Series]:
    folders = []

    def scratch(name: str):
        folders.append(session.scratch(name))
        return folders[-1]

    contenders: dict[str, Any] = {
        "awf": lambda: session.awf_run(size, scratch("run")),
        "empty": lambda: session.awf_run(0, scratch("run")),
        "floor": lambda: floor.durable_writes(scratch("floor"), size),
    }
    if with_peers:
        for peer in peers.PEERS:
            if peers.missing(peer) is None:
                contenders[peer] = lambda peer=peer: peers.measure(peer, "run", size, scratch(peer) / "db.sqlite")[
                    "seconds"
                ]
    results = rounds(session.config.repeats_at(size), contenders)
    for folder in folders:
        session.discard(folder)
    return results


def per_stage(samples: dict[str, Series], size: int) -> Series:
    """awf's marginal cost a stage, round by round."""
    return combine(lambda run, empty: (run.seconds - empty.seconds) / size, samples["awf"], samples["empty"])


def figures(session: Session) -> list[Figure]:
    size = session.config.stages
    samples = stage_runs(session, size, with_peers=True)
    within = Goal("≤ 1.5× the floor", ratio=1.5)
    awf = per_stage(samples, size)
    rows = [
        filled(
            Figure(
                "stages.floor",
                FAMILY,
                f"floor: {size:,} stages' durable writes in a bare loop, per stage",
                short="the floor",
            ),
            combine(lambda s: s / size, samples["floor"]),
        ),
        filled(
            Figure(
                "stages.awf",
                FAMILY,
                f"awf run, {size:,} stages, per stage (less a run of none)",
                baseline="stages.floor",
                goal=within,
            ),
            awf,
        ),
        filled(
            Figure(
                "stages.awf-empty",
                FAMILY,
                "awf run of no stages: an attempt's fixed cost",
                baseline="startup.pass",
                goal=Goal("≤ 8× python -c pass", ratio=8.0),
            ),
            combine(lambda t: t.seconds, samples["empty"]),
        ),
        filled(
            Figure(
                "stages.awf-empty-floor",
                FAMILY,
                "awf run of no stages, beside importing what it imports less awf",
                baseline="startup.floor",
            ),
            combine(lambda t: t.seconds, samples["empty"]),
        ),
    ]
    for peer, (name, _) in peers.PEERS.items():
        key = f"stages.{peer}"
        figure = Figure(
            key, FAMILY, f"{name}, {size:,} steps, per step", baseline="stages.floor", short=name.split(" (")[0]
        )
        why = peers.missing(peer)
        if why:
            figure.skipped = why
            rows.append(figure)
            continue
        rows.append(filled(figure, combine(lambda s: s / size, samples[peer])))
        rows.append(
            filled(
                Figure(
                    f"stages.awf-vs-{peer}",
                    FAMILY,
                    f"awf per stage, beside {name} per step",
                    baseline=key,
                    goal=Goal("< 1× (below the peer)", ratio=1.0),
                ),
                awf,
            )
        )
    return rows
