"""`awf send WORKFLOW/ID NAME`: queue an event for a run, and wake it if it is parked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..engine.events import wakes
from ..engine.events.attempt import waiting_on
from ..record import folder
from ..record.files import dumps
from ..record.inbox import append_event
from ..record.schemas import JsonSchema, every_problem
from ..view.runs_table import waits_text
from . import output
from .errors import CommandError, Problem
from .run_target import Where, find_run

NOT_QUEUED = Problem.REFUSED


def send_command(  # noqa: PLR0913 — a command's function takes its options one by one, as app.py hands them over
    *,
    target: str,
    name: str,
    data: str | None,
    data_file: Path | None,
    event_id: str | None,
    queue: bool,
    no_wake: bool,
    cwd: Path | None,
    run_root: Path | None,
    json_out: bool = False,
) -> int:
    paths = find_run(target, Where.of(cwd, run_root))
    history = folder.read_history(paths, ended_stages=False)
    declared = _declared(history)
    if declared is None:
        raise CommandError(f"run {paths.name} waits for no events: its workflow declares none", NOT_QUEUED)
    if name not in declared:
        names = ", ".join(sorted(declared)) or "none"
        raise CommandError(f"run {paths.name} has no event {name!r}; its workflow declares: {names}", NOT_QUEUED)
    bad_id = _event_id_problem(event_id) if event_id is not None else None
    if bad_id:
        raise CommandError(f"{bad_id}; nothing was queued", Problem.USAGE)
    try:
        value = _value(data, data_file)
    except ValueError as problem:
        raise CommandError(str(problem), Problem.USAGE) from None
    schema = declared[name]
    if schema is not None:
        problems = every_problem(schema, value)
        if problems and data is None and data_file is None:
            raise CommandError(
                f"event {name} needs a value and --data is missing; give it with --data JSON or --data-file FILE "
                f"(its schema: {first_line(problems)}); nothing was queued",
                NOT_QUEUED,
            )
        if problems:
            listed = "\n".join(f"  {problem}" for problem in problems)
            raise CommandError(f"event {name} does not fit its schema; nothing was queued:\n{listed}", NOT_QUEUED)
    refusal = _cannot_take(paths, history, queue)
    if refusal:
        raise CommandError(f"{refusal}; nothing was queued", NOT_QUEUED)
    event, new = append_event(paths, name, value, event_id)
    if not new and (event.name, event.value) != (name, value):
        raise CommandError(
            f"event id {event.id} was first sent as {event.name} {dumps(event.value)} on {event.sent}, not as "
            f"{name} {dumps(value)}; nothing was queued. Give this event an --event-id of its own",
            NOT_QUEUED,
        )
    output.result(json.dumps({"event": event.id, "queued": new}) if json_out else event.id)
    if not new:
        output.error_line(f"already queued as {event.id} on {event.sent}; not queued twice")
    if not no_wake:
        _wake(paths, name, new)
    return 0


def first_line(problems: list[str]) -> str:
    return problems[0] if len(problems) == 1 else f"{problems[0]}, and {len(problems) - 1} more"


def _event_id_problem(event_id: str) -> str | None:
    if not event_id:
        return "--event-id is empty; give an id such as ci-1234, or leave --event-id out for a new one"
    if any(char.isspace() or not char.isprintable() for char in event_id):
        return f"--event-id {event_id!r} holds spaces or control characters; an id is one word, such as ci-1234"
    if len(event_id) > 200:
        return f"--event-id {event_id[:40]!r}… is {len(event_id)} characters long; the limit is 200"
    return None


def _cannot_take(paths: folder.RunPaths, history: folder.History, queue: bool) -> str | None:
    """Why the run cannot take an event, or None. A stopped or failed run takes one, with
    --queue, on a continue; a completed run never does."""
    last = history.last
    if last is None or last.end is None or waiting_on(paths, history) is not None:
        return None  # running, interrupted (the send wakes it), or parked
    outcome = last.end["outcome"]
    if outcome == "completed":
        return f"run {paths.name} has completed; it takes no more events"
    if queue:
        return None
    return (
        f"run {paths.name} is {outcome}, so no wake takes the event; add --queue to keep it in the run's inbox "
        f"for a continue (awf run FILE --id {paths.id} --continue)"
    )


def _declared(history: folder.History) -> dict[str, JsonSchema | None] | None:
    """The events the run's latest attempt declared (the code may have changed since the run began)."""
    for attempt in reversed(history.attempts):
        if "events" in attempt.start:
            return attempt.start["events"]
    return history.run.get("events")


def _value(data: str | None, data_file: Path | None) -> Any:
    if data is not None and data_file is not None:
        raise ValueError("give the event's value with --data or --data-file, not both")
    if data_file is not None:
        try:
            data = data_file.read_text(encoding="utf-8")
        except OSError as error:
            raise ValueError(f"--data-file {data_file} cannot be read: {error.strerror or error}") from None
    if data is None:
        return None
    try:
        return json.loads(data)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"the event's value is not JSON: {error.msg} at line {error.lineno} column {error.colno}; "
            "quote it for the shell, e.g. --data '{\"ok\": true}'"
        ) from None


def _wake(paths: folder.RunPaths, name: str, new: bool) -> None:
    woken = wakes.wake(paths, force=new)
    if isinstance(woken, wakes.Woken):
        output.error_line(f"woke {paths.name}: {woken.said()}; its output goes to {paths.dir / 'wake.log'}")
    elif woken.state == "folder-in-use":  # not woken now, nor given up on
        output.error_line(f"{paths.name} is not woken: {woken.why}; awf wake or awf serve wakes it once it is free")
    elif woken.state == "busy":
        output.error_line(f"{paths.name}: {woken.why}; it takes the event when it reaches its wait")
    elif woken.state == "waiting" and new:
        waiting = waits_text(waiting_on(paths, folder.read_history(paths, ended_stages=False)) or [])
        output.error_line(f"run {paths.name} is not woken: it waits for {waiting}, not {name}")
    elif woken.state == "ended":
        output.error_line(f"the event waits in the inbox of {paths.name} for a continue ({woken.why})")
    else:
        output.error_line(f"{paths.name} is not woken: {woken.why}")
