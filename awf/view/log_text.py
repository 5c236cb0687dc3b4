"""Each line of run.jsonl, and each event sent to the run, as a person reads it in `awf logs`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ..engine.durations import format_duration
from ..record import entries, file_kinds
from ..record.agent_slots import waiting_text
from ..record.clock import parse_iso
from ..record.costs import money, turn_cost
from ..record.waiting import retry_text
from .one_line import skipped_text, status_text

MARKS = {"succeeded": "✓", "stopped": "■", "failed": "✗"}


def clock(text: str | None) -> str:
    """A recorded time as the local time of day."""
    try:
        return datetime.fromtimestamp(parse_iso(text or "")).strftime("%H:%M:%S")
    except ValueError:
        return "--:--:--"


def turn_handle(entry: Mapping[str, Any]) -> str:
    """The handle that names one turn: its attempt, its agent's key and its number."""
    return f"{entry.get('attempt', '?')}/{entry.get('agent', '?')}/{entry.get('turn', '?')}"


def session_handle(entry: Mapping[str, Any]) -> str | None:
    """The agent's native session, as its harness names it: `claude:8f3a…`."""
    session = entry.get("session")
    return f"{entry.get('harness') or 'agent'}:{session}" if session else None


def describe(entry: Mapping[str, Any]) -> str:
    """One entry, in words: what happened, to what, and how it went."""
    kind = entry.get("kind")
    shown = FORMATTERS.get(kind or "")
    text = shown(entry) if shown else _other(entry)
    attempt = entry.get("attempt")
    # A record a fork copied names its source's attempt, which is none of this run's.
    copied = kind == "stage" and isinstance((entry.get("record") or {}).get("forked_from"), dict)
    if kind not in ("run", "attempt-start", "attempt-end") and attempt is not None and not copied:
        text = f"#{attempt} {text}"
    return text


def _run(entry: entries.RunLine) -> str:
    argv = json.dumps(entry.get("argv") or [], ensure_ascii=False)
    text = f"run {entry.get('workflow')}/{entry.get('id')} created: argv {argv}, cwd {entry.get('cwd')}"
    forked = entry.get("forked_from")
    if isinstance(forked, dict):
        text += f"; {forked_text(forked)}"
    return text


def forked_text(forked: entries.ForkedFromFields) -> str:
    """Where a fork came from: `forked from W/ID@STAGE`, or `forked from W/ID` when it copied
    every succeeded record."""
    stage = forked.get("stage")
    return f"forked from {forked.get('run')}" + (f"@{stage}" if stage else "")


def _attempt_start(entry: entries.AttemptStartLine) -> str:
    flags = entry.get("flags") or {}
    words = [f"pid {entry.get('pid')}"]
    for key, value in flags.items():
        if value in (None, False):
            continue
        option = "--" + key.replace("_", "-")
        for one in value if isinstance(value, list) else [value]:  # a repeatable flag, once a value
            words.append(option if one is True else f"{option} {one}")
    return f"attempt {entry.get('attempt')} started ({', '.join(words)})"


def _stage_start(entry: entries.StageStartLine) -> str:
    return f"▸ {entry.get('stage')}"


def _stage_reused(entry: entries.StageReusedLine) -> str:
    return f"↺ {entry.get('stage')} reused, as attempt {entry.get('recorded_by')} recorded it"


def _stage(entry: entries.StageLine) -> str:
    record = entry["record"]
    name = entry.get("stage")
    outcome = record.get("outcome")
    forked = record.get("forked_from")
    if isinstance(forked, dict):
        return f"↺ {name}  copied from {forked.get('run')}, as its attempt {forked.get('attempt')} recorded it"
    if record.get("origin") == "provided":
        return f"↺ {name}  given with --values"
    if record.get("origin") == "skipped":
        return f"↷ {name}  {skipped_text(record)}"
    if outcome == "succeeded":
        took = _took(record)
        summary = f" · {record['summary']}" if record.get("summary") else ""
        return f"✓ {name}{took}{summary}"
    return f"{MARKS.get(outcome, '?')} {name}  {outcome}: {record.get('reason') or ''}".rstrip()


def _took(record: file_kinds.StageRecord) -> str:
    started, ended = record.get("started"), record.get("ended")
    if started is None or ended is None:
        return ""
    try:
        seconds = parse_iso(ended) - parse_iso(started)
    except ValueError:
        return ""
    return f"  {format_duration(max(seconds, 0.0))}"


def _start_point(entry: entries.StartPointLine) -> str:
    return f"start point: {entry.get('stage')} ({entry.get('why')})"


def _invalidated(entry: entries.InvalidatedLine) -> str:
    stages = ", ".join(entry.get("stages") or [])
    return f"no longer current: {stages} (they run again from {entry.get('start')}; their records stay in this log)"


def _log(entry: entries.LogLine) -> str:
    where = f"[{entry['stage']}] " if entry.get("stage") else ""
    return f"{where}{entry.get('message')}"


def _status(entry: entries.StatusLine) -> str:
    return "status: " + status_text(entry.get("text"), entry.get("progress"))


def _attempt_end(entry: entries.AttemptEndLine) -> str:
    outcome = entry.get("outcome")
    where = f" in {entry['stage']}" if entry.get("stage") else ""
    text = f"attempt {entry.get('attempt')} {outcome}{where} (exit {entry.get('exit_code')})"
    if entry.get("reason"):
        text += f": {entry['reason']}"
    if "retry" in entry:
        text += f"\n  {retry_text(entry['retry'])}"
    if entry.get("go_on"):
        text += f"\n  go on: {entry['go_on']}"
    return text


def _torn(entry: entries.TornLine) -> str:
    return f"a line a crash cut short was set aside ({len(entry.get('text') or '')} characters)"


def _agent(entry: entries.AgentLine) -> str:
    where = f"[{entry['stage']}] " if entry.get("stage") else ""
    model = f", {entry['model']}" if entry.get("model") else ""
    return f"{where}agent {entry.get('agent')} opened ({entry.get('harness')}{model})"


def _agent_process(entry: entries.AgentProcessLine) -> str:
    return f"agent {entry.get('agent')}: process {entry.get('pid')}"


def _pane(entry: entries.PaneLine) -> str:
    return (
        f"agent {entry.get('agent')}: process {entry.get('pid')} in a pane, window {entry.get('window')} of "
        f"{entry.get('workspace')!r} ({entry.get('multiplexer')} -L {entry.get('server')})"
    )


def _turn(entry: entries.TurnLine) -> str:
    where = f"[{entry['stage']}] " if entry.get("stage") else ""
    outcome = entry.get("outcome")
    text = f"{where}turn {entry.get('agent')}#{entry.get('turn')} {outcome}"
    if outcome != "answered" and entry.get("reason"):
        text += f": {entry['reason']}"
    seconds = entry.get("seconds")
    if isinstance(seconds, (int, float)):
        text += f"  {format_duration(seconds)}"
    cost = turn_cost(entry)
    if cost is not None:
        text += f"  {money(cost)}"
    if entry.get("label"):
        text += f" · {entry['label']}"
    text += f"  (turn {turn_handle(entry)}"
    session = session_handle(entry)
    if session:
        text += f", session {session}"
    return text + ")"


def _take(entry: entries.TakeLine) -> str:
    return f"took event {entry.get('name')} ({entry.get('event')}) for {entry.get('wait')}"


def _race(entry: entries.RaceLine) -> str:
    won = f"race {entry.get('wait')} won by {entry.get('winner')}"
    return f"{won}, taking event {entry['event']}" if entry.get("event") else won


def _timer(entry: entries.TimerLine) -> str:
    return f"timer {entry.get('wait')} due {entry.get('due')}"


def _event(entry: dict[str, Any]) -> str:
    """A line of events.jsonl: an event awf send queued for the run."""
    text = f"sent event {entry.get('name')} ({entry.get('id')})"
    if entry.get("value") is None:
        return text
    value = json.dumps(entry["value"], ensure_ascii=False)
    return f"{text}: {value if len(value) <= 200 else value[:199] + '…'}"


def _redo(entry: entries.RedoLine) -> str:
    return f"redo from stage {entry.get('stage')}"


def _redo_reached(entry: entries.RedoReachedLine) -> str:
    return f"redo reached stage {entry.get('stage')} (marked in attempt {entry.get('redo_attempt')})"


def _report(entry: entries.ReportLine) -> str:
    text = entry.get("text")
    if entry.get("error"):
        return f"report: none: {entry['error']}"
    if not isinstance(text, str):
        return "report: none (it returned None)"
    lines = text.strip().splitlines() or [""]
    return f"report: report.md, {len(lines)} line{'s' if len(lines) != 1 else ''}: {lines[0]}"


def _turn_start(entry: entries.TurnStartLine) -> str:
    where = f"[{entry['stage']}] " if entry.get("stage") else ""
    text = f"{where}turn {entry.get('agent')}#{entry.get('turn')} started ({entry.get('harness')})"
    if entry.get("session_file"):
        text += f": session file {entry['session_file']} from byte {entry.get('session_offset', 0)}"
    return text


def _slot_wait(entry: entries.SlotWaitLine) -> str:
    where = f"[{entry['stage']}] " if entry.get("stage") else ""
    return f"{where}turn {entry['agent']}#{entry['turn']} is {waiting_text(entry['harness'], entry['held_by'])}"


def _session(entry: entries.SessionLine) -> str:
    return f"turn {entry.get('agent')}#{entry.get('turn')} is in session {entry.get('session')}" + (
        f": session file {entry['session_file']}" if entry.get("session_file") else ""
    )


def _usage(entry: entries.UsageLine) -> str:
    text = f"turn {entry.get('agent')}#{entry.get('turn')} of attempt {entry.get('attempt')} used "
    tokens = entry.get("tokens")
    if not isinstance(tokens, dict):
        return text + f"what is unknown: {entry.get('unknown')}"
    text += f"{tokens.get('input', 0) + tokens.get('output', 0):,} tokens, "
    cost = entry.get("cost")
    text += money(cost) if isinstance(cost, (int, float)) else f"cost unknown ({entry.get('cost_unknown')})"
    return text + f"; read from its session by attempt {entry.get('by_attempt')}"


def _edited(entry: entries.EditedLine) -> str:
    old, new = str(entry.get("old") or "?")[:12], str(entry.get("new") or "?")[:12]
    return f"✎ {entry.get('stage')}  value set by {entry.get('by')} with awf set (sha256 {old} → {new})"


def _other(entry: Mapping[str, Any]) -> str:
    rest = {key: value for key, value in entry.items() if key not in ("version", "kind", "at", "attempt")}
    return f"{entry.get('kind')} {json.dumps(rest, ensure_ascii=False)}"


# How each kind of line reads; every kind has an entry (a test holds it to record/entries.py), and
# a kind whose fields say it plainly enough is shown as them. A line of a kind this awf does not
# know (written by a newer one) is shown the same way.
FORMATTERS: dict[str, Callable[[Any], str]] = {  # each takes the line of its kind
    "run": _run,
    "attempt-start": _attempt_start,
    "stage-start": _stage_start,
    "stage": _stage,
    "stage-reused": _stage_reused,
    "start-point": _start_point,
    "invalidated": _invalidated,
    "log": _log,
    "status": _status,
    "attempt-end": _attempt_end,
    "torn": _torn,
    "agent": _agent,
    "agent-process": _agent_process,
    "pane": _pane,
    "turn-start": _turn_start,
    "slot-wait": _slot_wait,
    "session": _session,
    "turn": _turn,
    "usage": _usage,
    "take": _take,
    "race": _race,
    "timer": _timer,
    "redo": _redo,
    "event": _event,
    "redo-reached": _redo_reached,
    "report": _report,
    "queued": _other,
    "unqueued": _other,
    "cancel": _other,
    "edited": _edited,
}
