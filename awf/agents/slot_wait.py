"""A turn's wait for a slot of its runtime, under `--max-agents`: said once, then polled.

The wait comes before the turn starts, so the turn's own timeout counts from when it has its
slot; the attempt's --timeout counts all along, and cancels the wait as it cancels a turn.
"""

from __future__ import annotations

import asyncio

from ..record import entries
from ..record.agent_slots import Slot, holders, try_take, waiting_text
from .host import Host

POLL = 0.1  # seconds between looks for a free slot


async def slot_for(host: Host, agent: str, harness: str, turn: int) -> Slot | None:
    """A slot of `harness` for `agent`'s turn, once one is free; None when its runtime has no limit."""
    limit = host.agent_limits.get(harness)
    if limit is None or host.run_root is None:
        return None
    said = False
    while True:
        slot = try_take(host.run_root, harness, limit, run=host.run, agent=agent)
        if slot is not None:
            return slot
        if not said:
            said = True
            held_by = holders(host.run_root, harness, limit)
            stage = host.stage()
            line = entries.slot_wait(
                attempt=host.attempt, agent=agent, turn=turn, harness=harness, limit=limit, held_by=held_by
            )
            if stage is not None:
                line["stage"] = stage
            entries.append(host.log, line)
            host.progress.agent_turn_waiting(stage, agent, waiting_text(harness, held_by))
        await asyncio.sleep(POLL)
