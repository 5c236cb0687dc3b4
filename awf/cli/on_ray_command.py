"""`awf run --on ray`: place the attempt on a Ray cluster, say where, and follow it if asked."""

from __future__ import annotations

import json

from ..engine.errors import Refusal
from ..engine.on_ray import OUTPUT, Placement, parse_resources, place, wait_for_ending, where_it_started
from ..engine.request import RunRequest
from . import output
from .errors import ExitCode

# How long the command waits to say which node took the attempt before it says it is queued.
PLACED_WITHIN = 20.0


def run_on_ray(request: RunRequest, *, address: str | None, resources: str | None, wait: bool, json_out: bool) -> int:
    if request.preview:
        raise Refusal("--plan reads the run here; it goes without --on ray")
    placed = place(request, Placement(address, parse_resources(resources)))
    started = where_it_started(placed, within=PLACED_WITHIN)
    name = placed.paths.name
    follow = f"awf logs --follow {name} --run-root {placed.paths.root}"
    if started is None:
        asked = json.dumps(placed.resources) if placed.resources else "a node"
        output.error_line(f"queued {name} on Ray: it waits for {asked}; follow it with: {follow}")
    else:
        on = started.get("placed")
        node = (on.get("node") if on else None) or "?"
        output.error_line(
            f"placed {name}: attempt {started['attempt']} runs on node {node[:12]} ({started.get('host', '?')}); "
            f"follow it with: {follow}"
        )
    if not wait:
        return 0
    code, end = wait_for_ending(placed, started)
    if end is None:
        output.error(
            f"the attempt of {name} ended with no ending: its node was lost, or its process killed; "
            f"the run reads interrupted (its output: {placed.paths.dir / OUTPUT})"
        )
        return int(ExitCode.FAILED)
    if json_out:
        output.result(placed.paths.out.read_text(encoding="utf-8").rstrip())
    else:
        where = f" in {end['stage']}" if end.get("stage") else ""
        said = f"attempt {end['attempt']} of {name} {end['outcome']}{where}"
        output.error_line(f"{said}: {end['reason']}" if end.get("reason") else said)
        if end.get("go_on"):
            output.error_line(f"go on with: {end['go_on']} --on ray")
    return code
