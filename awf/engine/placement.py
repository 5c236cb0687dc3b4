"""Where an attempt was placed: what a scheduler that started it tells it, for its `attempt-start` line.

An attempt placed on a Ray cluster is an ordinary `awf run` process; the task that starts it
names the node in the environment, and the attempt records it beside the host it runs on. An
attempt `awf serve` starts from its queue is one too, and carries the token of its `queued` line.
"""

from __future__ import annotations

import json
import os
from typing import TypedDict

from ..record.entries import PlacedFields

PLACED_ENV = "AWF_PLACED_ON"


class PlacedOn(TypedDict, total=False):
    placed: PlacedFields


def placed_on() -> PlacedOn:
    """The `placed` field of the attempt-start line, or nothing when no scheduler placed it."""
    given = os.environ.get(PLACED_ENV)
    if not given:
        return {}
    try:
        placed = json.loads(given)
    except json.JSONDecodeError:
        return {}
    if not isinstance(placed, dict) or placed.get("on") not in ("ray", "serve"):
        return {}
    if placed["on"] == "serve":
        return {"placed": {"on": "serve", "token": placed.get("token")}}
    return {"placed": {"on": "ray", "node": placed.get("node"), "token": placed.get("token")}}
