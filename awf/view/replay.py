"""The record, told to a view: each line of run.jsonl becomes the Observer call the engine made
when it wrote it, so `awf watch` shows what `awf run` showed.

A reused stage writes no line (reusing must stay cheap), so the replay reads reuse off the
record: once the attempt reaches its start point, every stage record an earlier attempt left that
was not invalidated was reused; and at the attempt's end, out.json lists each stage and how.
A turn writes its line when it settles; one still working is seen by its folder
(`agents/{attempt}/{key}/turn-{n}/`), which holds no outcome yet.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from ..record import entries
from ..record.agent_slots import waiting_text
from ..record.clock import iso, now_iso, parse_iso
from ..record.file_kinds import OutStage, StageRecord
from ..record.layout import RunPaths
from ..record.log import Line
from .lines import GONE_WITHOUT_ENDING


class Replay:
    """Feeds one run's last attempt to a view, line by line as they come."""

    def __init__(self, paths: RunPaths, view: Any) -> None:
        self.paths = paths
        self.view = view
        self.run: entries.RunLine | None = None
        self.start: entries.AttemptStartLine | None = None  # the shown attempt's attempt-start
        self.end: entries.AttemptEndLine | None = None  # and its attempt-end, once written
        self.current: dict[str, StageRecord] = {}  # current records, as the log has them
        self.earlier: dict[str, StageRecord] = {}
        self.invalidated: set[str] = set()
        self.announced: set[str] = set()
        self.stage: str | None = None
        self.agents: dict[str, entries.AgentLine] = {}
        self.working: set[tuple[str, int]] = set()
        self.settled: set[tuple[str, int]] = set()
        self.last_at: str | None = None  # when the log last moved: an interrupted attempt's end
        self.stages: list[OutStage] = []  # as out.json lists them: each stage entered, and how

    @property
    def attempt(self) -> int | None:
        return self.start["attempt"] if self.start else None

    def begin(self, lines: Iterable[Line]) -> None:
        """The log as it is now: history up to the last attempt's start, then that attempt. Only
        the lines since the latest attempt start are held, until a later one or the end says
        whether they are the last attempt's."""
        since: list[Line] = []
        for line in lines:
            if line.kind == "attempt-start":
                for earlier in since:
                    self._remember(earlier.entry)
                since = []
            since.append(line)
        first = since[0].entry if since else None
        if first is None or first["kind"] != "attempt-start":
            for line in since:
                self._remember(line.entry)
            return
        self.start = first
        self.earlier = {name: _as_filed(self.paths, name, record) for name, record in self.current.items()}
        _call(self.view, "earlier_records", self.earlier)
        try:
            _call(self.view, "started_at", parse_iso(first["at"]))
        except ValueError:
            pass
        self.view.attempt_started(
            self.run["workflow"] if self.run else self.paths.workflow,
            self.run["id"] if self.run else self.paths.id,
            first["attempt"],
            self.paths.dir,
        )
        self.feed(since[1:])

    def remember(self, lines: Iterable[Line]) -> None:
        """The log before the attempt to show, which has not started yet: its records, no view."""
        for line in lines:
            self._remember(line.entry)

    def _remember(self, entry: entries.Entry) -> None:
        if entry["kind"] == "run":
            self.run = entry
        elif entry["kind"] == "stage":
            self.current[entry["stage"]] = entry["record"]
        elif entry["kind"] == "invalidated":
            for name in entry.get("stages") or []:
                self.current.pop(name, None)

    def feed(self, lines: Iterable[Line]) -> None:
        fed = False
        for line in lines:
            fed = True
            entry = line.entry
            self._remember(entry)
            self.last_at = entry["at"] or self.last_at
            if self.start is None or self.end is not None or entries.attempt_of(entry) != self.attempt:
                continue
            self._tell(entry)
        if fed:
            _call(self.view, "redraw")

    def _tell(self, entry: entries.Entry) -> None:
        told = TOLD.get(entry["kind"])
        if told is not None:
            told(self, entry)

    def _invalidated(self, entry: entries.InvalidatedLine) -> None:
        self.invalidated.update(entry.get("stages") or [])

    def _start_point(self, entry: entries.StartPointLine) -> None:
        self._reused(
            [
                name
                for name, record in self.earlier.items()
                if name not in self.invalidated and record.get("outcome") == "succeeded"
            ]
        )

    def _stage_reused(self, entry: entries.StageReusedLine) -> None:
        # A summary here was made from the value handed back, which a person may have edited.
        fresh = {"summary": entry["summary"]} if "summary" in entry else {}
        self._reused([entry["stage"]], fresh)

    def _stage_start(self, entry: entries.StageStartLine) -> None:
        self.stage = entry["stage"]
        self.view.stage_started(entry["stage"], None)

    def _stage(self, entry: entries.StageLine) -> None:
        record = entry["record"]
        self.stage = None
        if record.get("origin") in ("provided", "skipped"):
            how = record["origin"]
            self.announced.add(record["stage"])
            self.stages.append({"stage": record["stage"], "how": how})
            self.view.stage_reused(record["stage"], record.get("value"), record, how)
        else:
            self.stages.append({"stage": record["stage"], "how": "ran"})
            self.view.stage_ended(record, _seconds(record))

    def _slot_wait(self, entry: entries.SlotWaitLine) -> None:
        why = waiting_text(entry["harness"], entry["held_by"])
        self.view.agent_turn_waiting(entry.get("stage"), entry["agent"], why)

    def _status(self, entry: entries.StatusLine) -> None:
        self.view.status(entry.get("text", ""), entry.get("progress"))

    def _log(self, entry: entries.LogLine) -> None:
        self.view.logged(entry.get("stage"), entry.get("message", ""))

    def _agent(self, entry: entries.AgentLine) -> None:
        self.agents[entry["agent"]] = entry
        _call(self.view, "agent_opened", entry["agent"], entry.get("model"))

    def _turn(self, entry: entries.TurnLine) -> None:
        key = (entry["agent"], entry.get("turn", 0))
        self.settled.add(key)
        if key not in self.working:  # it settled before the view saw it work: show it, as awf run did
            self.working.add(key)
            self._turn_started(entry.get("stage"), *key)
        self.view.agent_turn_ended(
            entry.get("stage"),
            entry["agent"],
            entry.get("outcome", "?"),
            entry.get("reason"),
            float(entry.get("seconds") or 0.0),
        )

    def _attempt_end(self, entry: entries.AttemptEndLine) -> None:
        self.end = entry

    def _reused(self, names: list[str], fresh: dict[str, Any] | None = None) -> None:
        for name in names:
            if name in self.announced:
                continue
            self.announced.add(name)
            self.stages.append({"stage": name, "how": "reused"})
            record = self.earlier.get(name)
            if record is not None and fresh:  # a fresh stage's new value, on its stage-reused line
                record = cast(StageRecord, {**record, **fresh})
            self.view.stage_reused(name, record.get("value") if record else None, record, "reused")

    def look_at_turns(self) -> None:
        """Agents at work: turn folders of this attempt with no settled line yet."""
        if self.start is None or self.end is not None:
            return
        base = self.paths.dir / "agents" / str(self.attempt)
        try:
            keys = sorted(os.listdir(base))
        except (FileNotFoundError, NotADirectoryError):
            return
        for key in keys:
            try:
                turns = sorted(name for name in os.listdir(base / key) if name.startswith("turn-"))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for name in turns:
                try:
                    number = int(name.removeprefix("turn-"))
                except ValueError:
                    continue
                if (key, number) in self.working or (key, number) in self.settled:
                    continue
                if not (base / key / name / "turn.json").exists():
                    continue
                self.working.add((key, number))
                self._turn_started(self.stage, key, number)

    def _turn_started(self, stage: str | None, key: str, number: int) -> None:
        opened = self.agents.get(key)
        harness = opened["harness"] if opened else ""
        turn = self.paths.dir / "agents" / str(self.attempt) / key / f"turn-{number}" / "turn.json"
        try:
            label = json.loads(turn.read_text(encoding="utf-8")).get("label") or ""
        except (OSError, ValueError, AttributeError):
            label = ""  # a turn folder awf is still writing, or one edited by hand: shown unlabelled
        self.view.agent_turn_started(stage, key, harness, number, str(label))

    def out(self) -> dict[str, Any]:
        """The ended attempt's out.json, or one made from its ending line when that cannot be read."""
        from ..record.errors import RecordError
        from ..record.folder import read_json_file

        assert self.end is not None
        try:
            out = read_json_file(self.paths.out, "out")
            if out.get("attempt") == self.attempt:
                self._reused([item["stage"] for item in out.get("stages") or [] if item.get("how") == "reused"])
                return out
        except (FileNotFoundError, RecordError):
            pass
        return {
            "workflow": self.paths.workflow,
            "id": self.paths.id,
            "attempt": self.attempt,
            "outcome": self.end["outcome"],
            "exit_code": self.end["exit_code"],
            "stage": self.end.get("stage"),
            "reason": self.end.get("reason"),
            "go_on": self.end.get("go_on"),
            "record": str(self.paths.dir),
            "started": self.start["at"] if self.start else None,
            "ended": self.end.get("at"),
            "stages": [],
            **({"retry": self.end["retry"]} if "retry" in self.end else {}),
        }

    def interrupted(self, go_on: str | None, died: float | None = None) -> dict[str, Any]:
        """An out.json-like ending for an attempt whose process is gone with no ending; `died`,
        when known, is when it was last alive, so the time it lived is told, not its last line's."""
        pid = self.start["pid"] if self.start else None
        ended = self.last_at or now_iso()
        if died is not None:
            ended = max(ended, iso(died), key=_seconds_of)
        return {
            "workflow": self.paths.workflow,
            "id": self.paths.id,
            "attempt": self.attempt or 0,
            "outcome": "interrupted",
            "exit_code": None,
            "stage": self.stage,
            "reason": GONE_WITHOUT_ENDING.replace("process", f"process (pid {pid})") if pid else "it never started",
            "go_on": go_on,
            "record": str(self.paths.dir),
            "started": self.start["at"] if self.start else now_iso(),
            "ended": ended,
            "stages": self.stages,
        }


# What the view is told of each kind of line of the shown attempt, as `awf run` told it.
# Each kind's teller takes the line of that kind (the dispatch by kind is what narrows it).
TOLD: dict[str, Callable[[Replay, Any], None]] = {
    "invalidated": Replay._invalidated,
    "start-point": Replay._start_point,
    "stage-reused": Replay._stage_reused,
    "stage-start": Replay._stage_start,
    "stage": Replay._stage,
    "log": Replay._log,
    "status": Replay._status,
    "agent": Replay._agent,
    "slot-wait": Replay._slot_wait,
    "turn": Replay._turn,
    "attempt-end": Replay._attempt_end,
}
# Kinds the view is not told of: `awf run` showed nothing as it wrote them. Some the replay
# reads elsewhere: `run` and `stage` lines before the attempt (`_remember`), its `attempt-start`
# (`begin`), turns still working off their folders (`look_at_turns`).
PASSED_OVER = frozenset(
    {
        "run",
        "attempt-start",
        "queued",
        "unqueued",
        "cancel",
        "edited",
        "report",
        "torn",
        "agent-process",
        "pane",
        "turn-start",
        "session",
        "usage",
        "take",
        "race",
        "timer",
        "redo",
        "redo-reached",
    }
)


def _seconds_of(text: str) -> float:
    try:
        return parse_iso(text)
    except ValueError:
        return 0.0


def _as_filed(paths: RunPaths, name: str, record: StageRecord) -> StageRecord:
    """The stage's record as its file holds it, where that is the same record: a person may have
    edited the file, and the file is what a continue reuses."""
    from ..record.errors import RecordError
    from ..record.folder import read_json_file

    try:
        filed = cast(StageRecord, read_json_file(paths.stage(name), "stage"))  # its schema checked it
    except (FileNotFoundError, RecordError):
        return record
    return filed if filed["attempt"] == record["attempt"] else record


def _seconds(record: Mapping[str, Any]) -> float:
    try:
        return max(parse_iso(record["ended"]) - parse_iso(record["started"]), 0.0)
    except (KeyError, TypeError, ValueError):
        return 0.0


def _call(view: Any, method: str, *args: Any) -> None:
    """A call only the live view takes; a plain-lines view has no use for it."""
    function = getattr(view, method, None)
    if function is not None:
        function(*args)
