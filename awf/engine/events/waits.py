"""`wf.events`: waiting for events and times, replayed on every wake.

A workflow with events parks when a wait cannot be answered now: the attempt ends `parked` with
no process left, and `awf send`, `awf wake` or `awf serve` starts the next attempt when what it
waits for is there. Each attempt runs the code from the top, so every wait is named by what it
waits for, the stage it is in and its occurrence there (`review/receive:ci#1`), and a later
attempt matches it to its record: a take returns the same event again, a race the same answer,
a timer the same due time.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...record import entries, folder
from ...record.clock import iso, parse_iso
from ...record.file_kinds import WaitFields
from ...record.inbox import Event, read_events
from ...record.log import Line
from ...record.schemas import JsonSchema
from ..durations import parse_duration
from ..errors import Park, WorkflowError


@dataclass(frozen=True)
class Winner:
    """The branch of a race that was ready first: its name, and its event if it was a receive."""

    name: str
    event: Event | None = None

    @property
    def value(self) -> Any:
        return self.event.value if self.event else None


# The lines a wait is replayed from.
REPLAY_KINDS = frozenset({"take", "race", "timer"})


@dataclass
class Replay:
    """What earlier attempts of an events run recorded about their waits."""

    takes: dict[str, entries.TakeLine] = field(default_factory=dict)
    races: dict[str, entries.RaceLine] = field(default_factory=dict)
    timers: dict[str, entries.TimerLine] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, paths: folder.RunPaths) -> Replay:
        return cls.of(folder.read_lines(paths.log, kinds=REPLAY_KINDS))

    @classmethod
    def of(cls, lines: Iterable[Line]) -> Replay:
        """The replay the lines of REPLAY_KINDS make."""
        replay = cls()
        for line in lines:
            entry = line.entry
            if entry["kind"] == "take":
                replay.takes[entry["wait"]] = entry
                replay.taken.add(entry["event"])
            elif entry["kind"] == "race":
                replay.races[entry["wait"]] = entry
                event = entry.get("event")
                if event:
                    replay.taken.add(event)
            elif entry["kind"] == "timer":
                replay.timers.setdefault(entry["wait"], entry)
        return replay


class Wait:
    """What `receive`, `select` and `timer` return: await it alone, or hand it to `race`."""

    def __init__(self, api: EventsApi, kind: str, names: tuple[str, ...] = (), seconds: float | None = None) -> None:
        self.api: EventsApi = api
        self.kind: str = kind
        self.names: tuple[str, ...] = names
        self.seconds: float | None = seconds

    def __await__(self) -> Generator[Any, None, Any]:
        return self.api._alone(self).__await__()


class EventsApi:
    """`wf.events` of one attempt."""

    def __init__(self, state: Any, declared: dict[str, JsonSchema | None], replay: Replay) -> None:
        self._state = state
        self._declared = declared
        self._replay = replay
        self._counts: dict[str, int] = {}
        self.replayed: list[str] = []  # waits answered from the record in this attempt

    # What a workflow calls.

    def receive(self, name: str) -> Wait:
        """The oldest event called `name` that no receive has taken."""
        self._check_names((name,), "receive")
        return Wait(self, "receive", (name,))

    def select(self, *names: str) -> Wait:
        """The oldest event with any of `names` that no receive has taken."""
        if not names:
            raise WorkflowError("wf.events.select needs at least one event name")
        self._check_names(names, "select")
        return Wait(self, "select", tuple(names))

    def timer(self, duration: str | float) -> Wait:
        """Ready once `duration` has passed since the wait was first reached (a time of day)."""
        return Wait(self, "timer", (), _seconds(duration))

    async def sleep(self, name: str, duration: str | float) -> None:
        """Wait until a time of day `duration` after this sleep was first reached, parking till then."""
        await self._alone(Wait(self, "sleep", (name,), _seconds(duration)))

    async def race(self, **branches: Wait) -> Winner:
        """Whichever branch is ready first; the answer is recorded and kept on every later attempt."""
        if not branches or not all(isinstance(wait, Wait) for wait in branches.values()):
            raise WorkflowError(
                "wf.events.race takes named waits: race(approved=wf.events.receive('approved'), "
                "remind=wf.events.timer('2d'))"
            )
        key = self._key("race", tuple(branches))
        recorded = self._replay.races.get(key)
        if recorded is not None:
            self.replayed.append(key)
            winner = Winner(recorded["winner"], self._event(recorded.get("event")))
            self._seen(key, [n for wait in branches.values() for n in wait.names], "replayed", winner.event)
            return winner
        ready: list[tuple[str, str, Event | None]] = []
        waits = []
        for branch, wait in branches.items():
            if wait.kind in ("receive", "select"):
                event = self._oldest(wait.names)
                if event is not None:
                    ready.append((event.sent, branch, event))
                waits.append({"wait": f"{key}/{branch}", "names": list(wait.names)})
            else:
                due = self._due(f"{key}/{branch}", wait.seconds or 0)
                if time.time() >= due:
                    ready.append((iso(due), branch, None))
                waits.append({"wait": f"{key}/{branch}", "due": iso(due)})
        if not ready:
            raise self._park(
                [
                    {
                        "wait": key,
                        "names": [n for w in waits for n in w.get("names", [])],
                        "due": min((str(w["due"]) for w in waits if "due" in w), default=None),
                    }
                ]
            )
        ready.sort(key=lambda item: parse_iso(item[0]))
        _, branch, event = ready[0]
        if self._looking_ahead:
            self._seen(key, [n for w in waits for n in w.get("names", [])], "queued" if event else "due", event)
        else:
            state = self._state
            self._append(
                entries.race(
                    attempt=state.attempt,
                    stage=state.current_stage,
                    wait=key,
                    winner=branch,
                    event=event.id if event else None,
                )
            )
        if event is not None:
            self._replay.taken.add(event.id)
        return Winner(branch, event)

    # How a wait is answered.

    async def _alone(self, wait: Wait) -> Any:
        if wait.kind in ("receive", "select"):
            return self._take(wait)
        key = self._key(wait.kind, wait.names)
        due = self._due(key, wait.seconds or 0)
        if time.time() >= due:
            if self._looking_ahead:
                self._seen(key, [], "due", None)
            return None
        raise self._park([{"wait": key, "names": [], "due": iso(due)}])

    def _take(self, wait: Wait) -> Event:
        key = self._key(wait.kind, wait.names)
        recorded = self._replay.takes.get(key)
        if recorded is not None and not self._older_than_redo(key, recorded):
            event = self._event(recorded["event"])
            if event is not None:
                self.replayed.append(key)
                self._seen(key, list(wait.names), "replayed", event)
                return event
        event = self._oldest(wait.names)
        if event is None:
            raise self._park([{"wait": key, "names": list(wait.names), "due": None}])
        if self._looking_ahead:
            self._seen(key, list(wait.names), "queued", event)
        else:
            state = self._state
            self._append(
                entries.take(
                    attempt=state.attempt, stage=state.current_stage, wait=key, event=event.id, name=event.name
                )
            )
        self._replay.taken.add(event.id)
        return event

    def _older_than_redo(self, key: str, take: entries.TakeLine | entries.RaceLine | entries.TimerLine) -> bool:
        """After a redo's stage, a take older than the redo is not replayed: the wait takes a new event."""
        redo = self._state.plan.redo
        return redo is not None and redo.reached and key not in redo.before_waits and take["attempt"] < redo.attempt

    def _oldest(self, names: tuple[str, ...]) -> Event | None:
        for event in read_events(self._state.paths):
            if event.name in names and event.id not in self._replay.taken:
                return event
        return None

    def _event(self, event_id: str | None) -> Event | None:
        if event_id is None:
            return None
        return next((event for event in read_events(self._state.paths) if event.id == event_id), None)

    def _due(self, key: str, seconds: float) -> float:
        recorded = self._replay.timers.get(key)
        if recorded is not None:
            return parse_iso(recorded["due"])
        due = time.time() + seconds
        if self._state.look_ahead is None:
            entry = entries.timer(attempt=self._state.attempt, stage=self._state.current_stage, wait=key, due=iso(due))
            self._append(entry)
            self._replay.timers[key] = {**entry}
        return due

    def _key(self, kind: str, names: tuple[str, ...]) -> str:
        stage = self._state.current_stage or "-"
        base = f"{stage}/{kind}:{','.join(names)}"
        self._counts[base] = self._counts.get(base, 0) + 1
        return f"{base}#{self._counts[base]}"

    def _append(self, line: entries.Entry) -> None:
        entries.append(self._state.paths.log, line)

    def _park(self, waits: list[WaitFields]) -> Park:
        """The attempt parks here; the look-ahead, which waits for nothing, notes that it would and ends."""
        if self._looking_ahead:
            self._state.look_ahead.would_park(waits)
        return Park(waits)

    @property
    def _looking_ahead(self) -> bool:
        """The look-ahead sees each wait through, as the attempt would answer it now, and records nothing."""
        return self._state.look_ahead is not None

    def _seen(self, key: str, names: list[str], how: str, event: Event | None) -> None:
        if self._looking_ahead:
            self._state.look_ahead.waited(key, names, how, event.id if event else None)

    def _check_names(self, names: tuple[str, ...], call: str) -> None:
        for name in names:
            if name not in self._declared:
                declared = ", ".join(sorted(self._declared)) or "none"
                raise WorkflowError(
                    f"wf.events.{call}({name!r}): the workflow declares no event {name!r} "
                    f"(declared: {declared}); add it to events= in @awf.workflow"
                )


def _seconds(duration: str | float) -> float:
    if isinstance(duration, (int, float)):
        return float(duration)
    try:
        return parse_duration(duration)
    except ValueError as error:
        raise WorkflowError(str(error)) from None
