"""Scale: stage overhead and continue cost at growing sizes, so growth beyond linear shows.

Linear means a stage costs the same in a run of 10,000 as in a run of 100: no per-stage work that
grows with the size of `run.jsonl` or of the stages folder. The growth rows set awf's ratio to the
floor at one size beside the same ratio at the size before it, and the marginal cost of a reused
stage beside the one before it: about 1× is linear.
"""

from __future__ import annotations

from itertools import pairwise

from .continuing import UNDER_50_US, continue_runs, marginal, per_reused
from .harness import Figure, Goal, Series, combine, filled
from .session import Session
from .stage_overhead import per_stage, stage_runs

FAMILY = "scale"
LINEAR = Goal("≤ 1.25× (linear)", ratio=1.25)


def to_floor(samples: dict[str, Series], size: int) -> Series:
    """awf's cost a stage over the floor's, round by round."""
    return combine(lambda awf, floor: awf / (floor / size), per_stage(samples, size), samples["floor"])


def figures(session: Session) -> list[Figure]:
    sizes = sorted(session.config.scale)
    headline = session.config.stages
    within = Goal("≤ 1.5× the floor", ratio=1.5)

    def stages(size: int) -> dict[str, Series]:
        return stage_runs(session, size, with_peers=size == headline)

    rows: list[Figure] = []
    for size in sizes:
        floor, awf = f"scale.floor@{size}", f"scale.awf@{size}"
        rows += [
            filled(
                Figure(floor, FAMILY, f"floor, {size:,} stages, per stage", short=f"the floor at {size:,}"),
                combine(lambda seconds, size=size: seconds / size, stages(size)["floor"]),
            ),
            filled(
                Figure(
                    awf,
                    FAMILY,
                    f"awf run, {size:,} stages, per stage",
                    baseline=floor,
                    goal=within,
                    short=f"awf at {size:,}",
                ),
                per_stage(stages(size), size),
            ),
            filled(
                Figure(
                    f"scale.continue@{size}",
                    FAMILY,
                    f"awf continue, {size:,} stages, per reused stage (less --version)",
                    baseline=floor,
                    goal=UNDER_50_US,
                ),
                per_reused(continue_runs(session, size), size),
            ),
        ]
    # Growth: below 100 stages the fixed costs and the noise drown the cost of one stage. A disk's
    # fsync may itself slow down over a long burst of them, so awf is judged by its ratio to the
    # floor at each size, which a disk that tires changes for both alike.
    pairs = [(a, b) for a, b in pairwise(sizes) if a >= min(100, sizes[-2])]
    previous = None
    for small, large in [(None, pairs[0][0]), *pairs] if pairs else []:
        key = f"scale.awf-to-floor@{large}"
        label = f"awf's ratio to the floor, {large:,} stages" + (f", beside {small:,}" if small else "")
        rows.append(
            filled(
                Figure(
                    key,
                    FAMILY,
                    label,
                    unit="×",
                    baseline=previous,
                    goal=LINEAR if previous else None,
                    short=f"the ratio at {large:,}",
                ),
                to_floor(stages(large), large),
            )
        )
        previous = key
    previous = None
    for small, large in pairs:
        key = f"scale.continue-marginal@{small}-{large}"
        goal = LINEAR if previous else UNDER_50_US
        rows.append(
            filled(
                Figure(
                    key,
                    FAMILY,
                    f"awf continue, marginal per reused stage, {small:,} → {large:,}",
                    baseline=previous,
                    goal=goal,
                    short=f"{small:,} → {large:,}",
                ),
                marginal(session, small, large),
            )
        )
        previous = key
    return rows
