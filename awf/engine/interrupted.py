"""What a continue says and does of the attempts before it that were interrupted: each named once,
where this attempt starts instead, and the agents they left running, ended or refused beside."""

from __future__ import annotations

from ..record import folder
from ..record.layout import RunPaths
from . import attempt_agents
from .claim import Claimed
from .errors import Refusal
from .observer import Observer
from .request import RunRequest


def name_interrupted(
    history: folder.History | None, observer: Observer, paths: RunPaths, given: str | None, from_stage: str | None
) -> None:
    """Each attempt since the last one that ended, which never ended and whose process is gone,
    once; for the latest, where this attempt starts instead."""
    if history is None:
        return
    trailing: list[folder.Attempt] = []
    for attempt in reversed(history.attempts):
        if attempt.end is not None or attempt.is_live():
            break
        trailing.append(attempt)
    for attempt in reversed(trailing):
        where = f" in stage {attempt.open_stage}" if attempt.open_stage else ""
        text = (
            f"attempt {attempt.number} was interrupted{where}: its process (pid {attempt.pid}) is gone, with no ending"
        )
        redoing = attempt.flags.get("from_stage")
        if redoing:
            text += f", while redoing from stage {redoing} (--from-stage {redoing})"
        if attempt is trailing[0]:
            text += "; " + _starts_instead(attempt, given, from_stage)
        observer.notice(text)
        attempt_agents.name_left_running(paths, attempt.number, observer, history)


def settle_leftovers(request: RunRequest, claimed: Claimed, observer: Observer) -> None:
    """Refuse to start beside an agent a crashed attempt left running, unless told to end it or not."""
    left = attempt_agents.left_running(claimed.paths, claimed.run.history)
    if not left or request.ignore_leftovers:
        return
    if not request.end_leftovers:
        raise Refusal(attempt_agents.leftovers_refusal(claimed.paths, left))
    stuck = attempt_agents.end_left_running(left, observer)
    if stuck:
        raise Refusal(f"--end-leftovers: {'; '.join(stuck)}; nothing was started")


def _starts_instead(crashed: folder.Attempt, given: str | None, from_stage: str | None) -> str:
    if given:
        return f"this attempt starts at --from-stage {given}"
    if from_stage:
        carried = ", without that attempt's --values" if crashed.flags.get("values") else ""
        return f"this attempt redoes from stage {from_stage} again{carried}"
    if crashed.open_stage:
        return f"this attempt starts at stage {crashed.open_stage}, the stage it was in"
    return "this attempt starts at the first stage with no succeeded record"
