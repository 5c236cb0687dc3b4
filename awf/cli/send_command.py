"""`awf send WORKFLOW/ID NAME`: queue an event for a run, and wake it if it is parked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..engine import attempt_events
from ..record import folder
from ..record.inbox import append_event
from ..record.schemas import every_problem
from . import output
from .errors import CommandError, ExitCode
from .run_target import Where, find_run

NOT_QUEUED = ExitCode.REFUSED


def send_command(
    *,
    target: str,
    name: str,
    data: str | None,
    data_file: Path | None,
    event_id: str | None,
    no_wake: bool,
    cwd: Path | None,
    run_root: Path | None,
    json_out: bool = False,
) -> int:
    paths = find_run(target, Where.of(cwd, run_root))
    history = folder.read_history(paths)
    declared = _declared(history)
    if declared is None:
        raise CommandError(f"run {paths.name} waits for no events: its workflow declares none", NOT_QUEUED)
    if name not in declared:
        names = ", ".join(sorted(declared)) or "none"
        raise CommandError(f"run {paths.name} has no event {name!r}; its workflow declares: {names}", NOT_QUEUED)
    try:
        value = _value(data, data_file)
    except ValueError as problem:
        raise CommandError(str(problem), ExitCode.USAGE, "usage") from None
    schema = declared[name]
    if schema is not None:
        problems = every_problem(schema, value)
        if problems:
            listed = "\n".join(f"  {problem}" for problem in problems)
            raise CommandError(f"event {name} does not fit its schema; nothing was queued:\n{listed}", NOT_QUEUED)
    event, new = append_event(paths, name, value, event_id)
    output.result(json.dumps({"event": event.id, "queued": new}) if json_out else event.id)
    if not new:
        output.error_line(f"event {event.id} was queued before, on {event.sent}; it is not queued twice")
    if not no_wake:
        _wake(paths)
    return 0


def _declared(history: folder.History) -> dict[str, Any] | None:
    """The events the run's latest attempt declared (the code may have changed since the run began)."""
    for attempt in reversed(history.attempts):
        if "events" in attempt.start:
            declared: dict[str, Any] = attempt.start["events"]
            return declared
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


def _wake(paths: folder.RunPaths) -> None:
    history = folder.read_history(paths)
    last = history.last
    if last is not None and last.is_live():
        output.error_line(
            f"attempt {last.number} of {paths.name} is running; it takes the event when it reaches its wait"
        )
        return
    if attempt_events.waiting_on(paths, history) is None:
        status = history.status
        output.error_line(f"run {paths.name} is {status}, not parked; the event waits in its inbox for a continue")
        return
    pid = attempt_events.wake_if_ready(paths)
    if pid is None:
        output.error_line(f"run {paths.name} stays parked: it waits for something else")
    else:
        output.error_line(
            f"woke {paths.name}: attempt {(last.number if last else 0) + 1} started (pid {pid}); "
            f"its output goes to {paths.dir / 'wake.log'}"
        )
