"""The attempt's events: `wf.events`, the redo mark of a run with events, and what a parked run waits for."""

from __future__ import annotations

import time
from typing import Any

from ...record import entries, folder
from ...record.clock import parse_iso
from ...record.file_kinds import WaitFields
from ...record.inbox import read_events
from ...record.layout import RunPaths
from ...record.schemas import JsonSchema
from ..context import AttemptState
from ..errors import Park
from ..lookahead import LookAhead
from ..plan import RedoMark
from ..request import RunRequest
from ..schema import load_schema
from ..workflow import Workflow
from .waits import REPLAY_KINDS, EventsApi, Replay


def declared(workflow: Workflow[Any]) -> dict[str, JsonSchema | None]:
    """The workflow's events and their schemas, as JSON (None: any value)."""
    events = workflow.events or {}
    return {
        name: (load_schema(spec, workflow.base_dir, f"event {name}").schema if spec is not None else None)
        for name, spec in events.items()
    }


def attach(state: AttemptState, workflow: Workflow[Any], history: folder.History | None) -> None:
    """Give the attempt its `wf.events`, with what earlier attempts recorded of their waits (none
    for a new run, which has no `history`)."""
    replay = Replay.of(history.lines(REPLAY_KINDS)) if history is not None else Replay()
    state.events = EventsApi(state, dict(workflow.events or {}), replay)


def record_redo(paths: RunPaths, attempt: int, stage: str) -> None:
    entries.append(paths.log, entries.redo(attempt=attempt, stage=stage))


# The lines a redo is read from.
REDO_KINDS = frozenset({"redo", "redo-reached"})


def redo_mark(
    history: folder.History | None, attempt: int, from_stage: str | None
) -> tuple[RedoMark | None, str | None]:
    """The redo that holds for this attempt, and the --from-stage it still has to reach.

    A --from-stage given now starts a new redo. Otherwise the run's last redo holds: reached, it
    marks which records are older than it; not yet reached (its attempt crashed or stopped on the
    way), this attempt goes on towards its stage. A new run (no `history`) has no redo.
    """
    if from_stage is not None:
        return RedoMark(attempt, from_stage), from_stage
    if history is None:
        return None, None
    last: entries.RedoLine | None = None
    reached: entries.RedoReachedLine | None = None
    for line in history.lines(REDO_KINDS):
        entry = line.entry
        if entry["kind"] == "redo":
            last, reached = entry, None
        elif entry["kind"] == "redo-reached" and last is not None and entry.get("redo_attempt") == last["attempt"]:
            reached = entry
    if last is None:
        return None, None
    if reached is None:
        return RedoMark(last["attempt"], last["stage"]), last["stage"]
    return RedoMark(
        last["attempt"], last["stage"], True, set(reached["before_stages"]), set(reached["before_waits"])
    ), None


def park_refusal(paths: RunPaths, request: RunRequest, look: LookAhead) -> str:
    """Why a --from-stage the look-ahead sees parking before its stage is refused, and what to do."""
    assert look.park is not None
    park = Park(look.park)
    after = look.waits[-1].after if look.waits else None
    names = sorted({name for wait in look.park for name in wait.get("names") or []})
    where = f"after stage {after}" if after else "before any stage"
    queued = f", and no {' or '.join(names)} event waits in the run's inbox" if names else ""
    text = (
        f"--from-stage {request.from_stage}: the redo would park before it reaches stage {request.from_stage}, "
        f"{park.text} {where}{queued}; a redo stops rather than park on its way, so nothing was started.\n"
    )
    earlier = f"; or redo from a stage before the wait (--from-stage {after})" if after else ""
    if not request.resume:
        return text + f"Start the run from its first stage: it parks at the wait, and awf send wakes it{earlier}"
    if names:
        send = f"awf send {paths.name} {names[0]} --data JSON --no-wake"
        return text + f"Send the event first without waking the run ({send}), then redo{earlier}"
    return text + f"Redo once that time has passed{earlier}"


def waiting_on(paths: RunPaths, history: folder.History) -> list[WaitFields] | None:
    """What a parked run waits for, or None when it does not wait.

    A redo that stopped rather than park before its stage waits too: its ending keeps the waits,
    so a send, a wake or serve go on with the redo when what it waits for comes."""
    last = history.last
    if last is None or last.end is None or "waits" not in last.end:
        return None
    return list(last.end.get("waits") or [])


def is_ready(paths: RunPaths, history: folder.History, now: float | None = None) -> bool:
    """A parked run that now has what it waits for: an event not yet taken, or a due time passed."""
    waits = waiting_on(paths, history)
    if not waits:
        return False
    now = time.time() if now is None else now
    if any((due := wait.get("due")) and parse_iso(due) <= now for wait in waits):
        return True
    names = {name for wait in waits for name in wait.get("names") or []}
    if not names:
        return False
    taken = Replay.read(paths).taken
    return any(event.name in names and event.id not in taken for event in read_events(paths))


def next_due(history: folder.History) -> float | None:
    """The earliest due time a parked run waits for."""
    last = history.last
    if last is None or last.end is None:
        return None
    dues = [parse_iso(due) for wait in last.end.get("waits") or [] if (due := wait.get("due"))]
    return min(dues) if dues else None


def held_back(paths: RunPaths, history: folder.History) -> str | None:
    """Why a wake leaves this interrupted run alone: an agent its crashed attempt left still runs."""
    from ..attempt_agents import left_running

    left = left_running(paths, history)
    if not left:
        return None
    agents = ", ".join(f"agent {one.agent} of attempt {one.attempt} (pid {one.pid})" for one in left)
    file = (history.last.start.get("file") if history.last else None) or history.run.get("file") or "FILE"
    return (
        f"not woken: {paths.name} was interrupted, and {agents} it left still runs; end it with "
        f"{left[0].end_command}, or go on with awf run {file} --id {paths.id} --continue --end-leftovers"
    )
