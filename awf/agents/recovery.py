"""What earlier attempts' turns used and could not record, read from their agents' sessions.

A turn records its tokens and cost when its agent's program reports them (its result line). A
turn cut short never gets that report: awf killed with -9, a second Ctrl-C, a cancelled or
timed-out attempt that ended the program first, a program that exited without one. The model was
paid all the same. Every turn wrote where its session is kept as it started (turn_sessions.py);
as the next attempt starts, it reads each such turn's stretch of the session file and appends a
`usage` line marked recovered, which takes the place of whatever the turn itself recorded. A
session file that is gone or cannot be read gives a `usage` line whose use is unknown, and why:
never zero.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..record import entries
from ..record.costs import money
from ..record.files import file_size
from ..record.log import Line, read_lines
from .channel import agents_dir
from .harness import Harness, Session
from .registry import NoHarness, own_harness

KINDS = frozenset({"turn-start", "session", "turn", "usage"})


@dataclass
class _Turn:
    attempt: int
    agent: str
    turn: int
    start: entries.TurnStartLine
    session: entries.TurnStartLine | entries.SessionLine  # the latest line that says where the session is
    ended: entries.TurnLine | None = None  # its `turn` line
    settled: bool = False  # a `usage` line counts it already
    end: int | None = None  # the byte of the session file the agent's next turn began at


@dataclass
class Recovered:
    """What one attempt's unrecorded turns were found to have used."""

    attempt: int
    tokens: int = 0
    cost: float | None = 0.0
    unknown: list[str] = field(default_factory=list)  # why some use cannot be known, or priced

    def line(self) -> str:
        """`attempt 2 used 41,200 tokens ($0.31) that it could not record; counted now`."""
        said = money(self.cost) if self.cost is not None else "cost unknown"
        text = f"attempt {self.attempt} used {self.tokens:,} tokens ({said}) that it could not record; counted now"
        if self.unknown:
            text += "; unknown: " + "; ".join(self.unknown)
        return text


def settle(
    log: Path,
    attempt: int,
    env: Mapping[str, str] | None = None,
    *,
    own: bool = False,
    lines: Iterable[Line] | None = None,
) -> list[Recovered]:
    """Append a `usage` line for each turn of an attempt before `attempt` (with `own`, of `attempt`
    itself, as it ends) whose use went unrecorded, read from its session file; return what each
    attempt was found to have used. `lines`: the log's lines of KINDS, when they are read already."""
    env = os.environ if env is None else env
    agents_dir(log.parent)  # what an earlier attempt's agent may still be writing: read without following links
    found: dict[int, Recovered] = {}
    for turn in _unsettled(log, attempt + 1 if own else attempt, lines):
        harness = _harness(turn.start.get("harness"))
        if harness is None:
            continue
        fields = _read(harness, turn, env)
        line = entries.usage(
            attempt=turn.attempt,
            agent=turn.agent,
            turn=turn.turn,
            harness=turn.start["harness"],
            by_attempt=attempt,
            session=turn.session.get("session"),
            **fields,
            recovered=True,
        )
        stage = turn.start.get("stage")
        if isinstance(stage, str):
            line["stage"] = stage
        entries.append(log, line)
        summed = found.setdefault(turn.attempt, Recovered(turn.attempt))
        tokens = fields.get("tokens")
        where = f"agent {turn.agent}, turn {turn.turn}"
        if tokens is None:
            summed.unknown.append(f"{fields['unknown']} ({where})")
            summed.cost = None
            continue
        summed.tokens += tokens["input"] + tokens["output"]
        if fields.get("cost") is None:
            summed.cost = None
            summed.unknown.append(f"the cost of {where}: {fields.get('cost_unknown') or 'no price'}")
        elif summed.cost is not None:
            summed.cost += fields["cost"]
    return [found[number] for number in sorted(found) if found[number].tokens or found[number].unknown]


_TurnLines = entries.TurnStartLine | entries.SessionLine | entries.TurnLine | entries.UsageLine


def _turn_lines(lines: Iterable[Line]) -> Iterator[_TurnLines]:
    """The lines that tell of turns, by their kind."""
    for line in lines:
        if line.entry["kind"] in KINDS:
            yield cast(_TurnLines, line.entry)  # its kind is one of the four


def _unsettled(log: Path, attempt: int, lines: Iterable[Line] | None) -> list[_Turn]:
    """The turns of earlier attempts that used what they could not record, and have no `usage` line."""
    turns: dict[tuple[int, str, int], _Turn] = {}
    order: list[_Turn] = []
    for entry in _turn_lines(read_lines(log, kinds=KINDS, validate=False) if lines is None else lines):
        # Read unchecked (validate=False): each key is looked at before it is believed.
        number = entry.get("attempt")
        if not isinstance(number, int) or number >= attempt:
            continue
        turn_number = entry.get("turn")
        key = (number, str(entry.get("agent")), turn_number if isinstance(turn_number, int) else 0)
        if entry["kind"] == "turn-start":
            for earlier in reversed(order):  # this agent's turn before it ended where this one began
                if earlier.attempt == number and earlier.agent == key[1]:
                    if earlier.end is None and _same_file(earlier.session, entry):
                        earlier.end = entry.get("session_offset")
                    break
            found = _Turn(number, key[1], key[2], entry, entry)
            turns[key] = found
            order.append(found)
        elif key in turns:
            if entry["kind"] == "session":
                turns[key].session = entry
            elif entry["kind"] == "turn":
                turns[key].ended = entry
            else:
                turns[key].settled = True
    return [
        turn
        for turn in order
        if not turn.settled
        and (turn.ended is None or turn.ended.get("unreported"))
        and (turn.session.get("session") or turn.session.get("session_file"))
    ]


def _same_file(
    session: entries.TurnStartLine | entries.SessionLine, start: entries.TurnStartLine | entries.SessionLine
) -> bool:
    return bool(session.get("session_file")) and session.get("session_file") == start.get("session_file")


def _harness(name: Any) -> Harness | None:
    """The harness of that name, when it can read its sessions."""
    if not isinstance(name, str):
        return None
    try:
        harness = own_harness(name)
    except (NoHarness, ImportError):
        return None
    return harness if type(harness).session_usage is not Harness.session_usage else None


def _read(harness: Harness, turn: _Turn, env: Mapping[str, str]) -> dict[str, Any]:
    """The fields of the turn's `usage` line: what its stretch of the session file says, or why
    that cannot be known."""
    where = turn.session
    recorded = where.get("session_file")
    path = Path(recorded) if isinstance(recorded, str) and recorded else None
    session = where.get("session")
    if path is None and isinstance(session, str):
        path = harness.session_file(_session_named(session, turn.start), env)
    offset = where.get("session_offset")
    start = offset if isinstance(offset, int) else 0
    if path is None:
        return _unknown(f"the file of {harness.name} session {where.get('session')} cannot be found")
    try:
        size = file_size(path)
        end = turn.end if isinstance(turn.end, int) and start <= turn.end <= size else None
        used = harness.session_usage(path, start, end)
    except FileNotFoundError:
        return {**_unknown(f"the session file {path} is gone"), "session_file": str(path)}
    except OSError as error:
        return {**_unknown(f"the session file {path} cannot be read ({error.strerror})"), "session_file": str(path)}
    if used is None:
        return _unknown(f"the {harness.name} harness cannot read its sessions")
    return {**used, "session_file": str(path), "from": start, "to": end if end is not None else size}


def _unknown(why: str) -> dict[str, Any]:
    return {"tokens": None, "cost": None, "unknown": why}


def _session_named(session_id: str, start: entries.TurnStartLine) -> Session:
    """Enough of a session for its harness to say where its file is."""

    def cannot_spawn(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a session read for its usage starts nothing")

    cwd = Path.cwd()  # a turn-start line names no folder: the continue runs where the run works
    return Session(start["agent"], {}, None, cwd, cwd, cannot_spawn, id=session_id)
