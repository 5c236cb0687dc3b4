"""Scale: stage overhead and continue cost at growing sizes, so growth beyond linear shows.

Linear means a stage costs the same in a run of 10,000 as in a run of 100: no per-stage work that
grows with the size of `run.jsonl` or of the stages folder. The growth rows divide the cost at one
size by the cost at the size before it: about 1× is linear.
"""

from __future__ import annotations

from itertools import pairwise

from .continuing import UNDER_50_US, continue_runs, marginal, per_reused
from .harness import Figure, Goal, combine, filled
from .session import Session
from .stage_overhead import per_stage, stage_runs

FAMILY = "scale"
LINEAR = Goal("≤ 1.25× (linear)", ratio=1.25)


def figures(session: Session) -> list[Figure]:
    sizes = sorted(session.config.scale)
    headline = session.config.stages
    rows: list[Figure] = []
    for size in sizes:
        stages = stage_runs(session, size, with_peers=size == headline)
        rows.append(filled(Figure(f"scale.floor@{size}", FAMILY, f"floor, {size:,} stages, per stage"),
                           combine(lambda s, size=size: s / size, stages["floor"])))
        rows.append(filled(Figure(f"scale.awf@{size}", FAMILY, f"awf run, {size:,} stages, per stage",
                                  baseline=f"scale.floor@{size}", goal=Goal("≤ 1.5× the floor", ratio=1.5)),
                           per_stage(stages, size)))
        rows.append(filled(Figure(f"scale.continue@{size}", FAMILY,
                                  f"awf continue, {size:,} stages, per reused stage (less --version)",
                                  baseline=f"scale.floor@{size}", goal=UNDER_50_US),
                           per_reused(continue_runs(session, size), size)))
    # Growth: below 100 stages the fixed costs and the noise drown the cost of one stage.
    pairs = [(a, b) for a, b in pairwise(sizes) if a >= min(100, sizes[-2])]
    for small, large in pairs:
        rows.append(filled(Figure(f"scale.awf-growth@{large}", FAMILY,
                                  f"awf run per stage, {large:,} beside {small:,} stages",
                                  baseline=f"scale.awf@{small}", goal=LINEAR),
                           per_stage(stage_runs(session, large, with_peers=large == headline), large)))
    previous = None
    for small, large in pairs:
        key = f"scale.continue-marginal@{small}-{large}"
        rows.append(filled(Figure(key, FAMILY, f"awf continue, marginal per reused stage, {small:,} → {large:,}",
                                  baseline=previous, goal=LINEAR if previous else UNDER_50_US),
                           marginal(session, small, large)))
        previous = key
    return rows
