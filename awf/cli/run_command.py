"""`awf run`: start or continue a run, show its progress, print its result, exit with its code."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..engine import attempt_outcome
from ..engine.attempt import run_attempt
from ..engine.durations import parse_duration
from ..engine.ending import AttemptEnd
from ..engine.errors import Refusal
from ..engine.request import RunRequest
from ..engine.start_point import Preview
from ..record.files import json_lines_text
from ..view import telemetry
from ..view.choose import choose_view
from . import output


def run_command(  # noqa: PLR0913 — the command's options, each by the name it has in cli/app.py
    *,
    file: str,
    run_id: str | None = None,
    resume: bool = False,
    from_stage: str | None = None,
    to_stage: str | None = None,
    only_stage: str | None = None,
    skip_stage: list[str] | None = None,
    values: Path | None = None,
    timeout: str | None = None,
    max_cost: str | None = None,
    cwd: Path | None = None,
    sandbox: str | None = None,
    run_root: Path | None = None,
    worktree: bool = False,
    base: str | None = None,
    share_folder: bool = False,
    json_out: bool = False,
    no_color: bool = False,
    preview: bool = False,
    end_leftovers: bool = False,
    ignore_leftovers: bool = False,
    on: str | None = None,
    ray_address: str | None = None,
    ray_resources: str | None = None,
    wait: bool = False,
    no_check: bool = False,
    queue: bool = False,
    priority: int | None = None,
    max_agents: str | None = None,
    argv: list[str] | None = None,
) -> int:
    """`awf run FILE [options] [-- args]`, its options as typer or cli/plain.py read them."""
    skip_stages = list(dict.fromkeys(skip_stage or []))
    if end_leftovers and ignore_leftovers:
        raise Refusal("--end-leftovers and --ignore-leftovers contradict each other: give one")
    from_stage, to_stage = _stage_bounds(only_stage, from_stage, to_stage)
    request = RunRequest(
        target=file,
        run_id=run_id,
        resume=resume,
        cwd=cwd,
        run_root=run_root,
        argv=argv,
        from_stage=from_stage,
        to_stage=to_stage,
        skip_stages=skip_stages,
        values_file=values,
        preview=preview,
        sandbox=sandbox,
        worktree=worktree,
        base=base,
        share_folder=share_folder,
        end_leftovers=end_leftovers,
        ignore_leftovers=ignore_leftovers,
        max_agents_text=max_agents,
    )
    _limit(request, timeout, max_cost)
    if values is not None and from_stage is None and not skip_stages:
        raise Refusal(
            "--values goes only with --from-stage or --skip-stage: name the stage the run starts at, or those it skips"
        )
    _check_placement(on, ray_address, ray_resources, wait)
    _check_queue(queue, priority, on=on, preview=preview)
    if not no_check:
        from .check_command import warnings_of

        request.warnings = warnings_of(file)
    if on == "ray":
        from .on_ray_command import run_on_ray

        return run_on_ray(request, address=ray_address, resources=ray_resources, wait=wait, json_out=json_out)
    if queue:
        return _queue(request, priority or 0, json_out)
    if preview:
        ending = run_attempt(request, choose_view(not no_color))
    else:
        # Traces and metrics when the OTEL_* variables ask; sent once the attempt has ended, whatever ended it.
        reporter, finish = telemetry.observed(choose_view(not no_color), os.environ)
        try:
            ending = run_attempt(request, reporter)
            if isinstance(ending, AttemptEnd):
                reporter.closing(ending)
        finally:
            finish()
    if isinstance(ending, Preview):
        from ..view.preview import preview_data, preview_text

        output.result(json.dumps(preview_data(ending), indent=2) if json_out else preview_text(ending))
        return ending.exit_code
    if ending.error:
        output.error(ending.error)
    _print_result(ending, json_out)
    if ending.write_error is not None:
        output.error(
            f"{ending.write_error}\n  free the space or fix the folder, then go on: {ending.go_on or 'a continue'}"
        )
    return ending.exit_code


def _limit(request: RunRequest, timeout: str | None, max_cost: str | None) -> None:
    """The attempt's --timeout and --max-cost, read as the request keeps them."""
    if timeout is not None:
        try:
            request.timeout = parse_duration(timeout)
        except ValueError as problem:
            raise Refusal(f"--timeout {problem}") from None
        request.timeout_text = timeout
    if max_cost is not None:
        from ..engine.budget import parse_max_cost

        try:
            request.max_cost = parse_max_cost(max_cost)
        except ValueError as problem:
            raise Refusal(f"--max-cost {problem}") from None
        request.max_cost_text = max_cost


def _check_placement(on: str | None, ray_address: str | None, ray_resources: str | None, wait: bool) -> None:
    """Refuse a place awf cannot put an attempt, and the Ray options without --on ray."""
    if on is not None and on != "ray":
        raise Refusal(f"--on {on}: awf places attempts on ray, or here when --on is left out")
    if on is None and (ray_address or ray_resources or wait):
        given = ", ".join(
            flag
            for flag, set_ in [("--ray-address", ray_address), ("--ray-resources", ray_resources), ("--wait", wait)]
            if set_
        )
        raise Refusal(f"{given} go only with --on ray")


def _check_queue(queue: bool, priority: int | None, *, on: str | None, preview: bool) -> None:
    """Refuse --priority without --queue, and what --queue cannot go with."""
    if not queue:
        if priority is not None:
            raise Refusal("--priority goes only with --queue: it orders the queue awf serve starts")
        return
    if on is not None:
        raise Refusal("--queue and --on ray are two places for one attempt: give one")
    if preview:
        raise Refusal("--plan shows what an attempt would do and runs nothing; it goes without --queue")


def _queue(request: RunRequest, priority: int, json_out: bool) -> int:
    """`awf run --queue`: the run readied and its attempt queued; the run and its place printed."""
    from ..engine.queue import enqueue

    queued = enqueue(request, priority)
    name = queued.paths.name
    if json_out:
        shown = {"run": name, "token": queued.token, "priority": priority, "place": queued.place, "of": queued.of}
        output.result(json.dumps(shown, indent=2))
    else:
        output.result(f"queued {name}: place {queued.place} of {queued.of}")
        output.error_line(f"awf serve --run-root {queued.paths.root} starts it; awf cancel {name} withdraws it")
    return 0


def _stage_bounds(only: str | None, start: str | None, end: str | None) -> tuple[str | None, str | None]:
    """--from-stage and --to-stage, as given or as --only-stage sets both."""
    if only is None:
        return start, end
    if start is not None or end is not None:
        raise Refusal("--only-stage is --from-stage STAGE --to-stage STAGE: give it alone, or those two")
    return only, only


def _print_result(ending: AttemptEnd, json_out: bool) -> None:
    if json_out or ending.outcome != attempt_outcome.COMPLETED:
        if json_out:
            output.result(_out_text(ending))
        return
    present = ending.workflow.present if ending.workflow else None
    if present is None:
        # As out.json is written: its stages a line each, by the C encoder (indenting is slower).
        output.result(_out_text(ending))
        return
    try:
        shown = present(ending.value)
        text = shown if isinstance(shown, str) else json.dumps(_plain(shown), ensure_ascii=False, indent=2)
    except Exception as problem:
        output.error(f"present failed ({type(problem).__name__}: {problem}); printing the whole record")
        output.result(_out_text(ending))
        return
    output.result(text)


def _out_text(ending: AttemptEnd) -> str:
    """out.json as the attempt wrote it; made again when it could not be written."""
    return ending.out_text if ending.out_text is not None else json_lines_text(ending.out)


def _plain(value: object) -> object:
    """What present returned, as JSON can hold it: an instance of a type (a pydantic model) as its JSON form."""
    if "pydantic" not in sys.modules:
        return value
    from ..engine.typed import plain_json

    return plain_json(value)
