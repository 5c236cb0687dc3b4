"""Which harness runs an agent: the ones registered, or the module `awf.agents.harness_{name}`.

A harness is added by writing that module with a `HARNESS` (a Harness subclass or instance):
nothing here needs to change. `register` adds one from elsewhere (a plugin, a test).

`routed_to(harness)` makes every agent opened under it run on that one harness, whatever its
runtime names: awf.testing runs a workflow's agents ("claude", "codex", exec ...) as scripts
that way, through the same turns, channel and records as real ones.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .harness import Harness

_registered: dict[str, Harness] = {}
_NAME = re.compile(r"[a-z][a-z0-9_]*")
# A context variable, so the routing reaches the attempt's tasks and no other thread's.
_routed: ContextVar[Harness | None] = ContextVar("awf_routed_harness", default=None)


class NoHarness(Exception):
    """There is no harness of that name: the turn fails with this reason."""


def register(harness: Harness | type[Harness]) -> None:
    instance = harness() if isinstance(harness, type) else harness
    if not instance.name:
        raise ValueError(f"{instance!r} has no name")
    _registered[instance.name] = instance


@contextmanager
def routed_to(harness: Harness) -> Iterator[None]:
    """Within this block, every agent runs on `harness`, whatever harness its runtime names."""
    token = _routed.set(harness)
    try:
        yield
    finally:
        _routed.reset(token)


def routed() -> bool:
    """Whether agents run on a routed harness here (awf.testing's scripts), not on their own."""
    return _routed.get() is not None


def harness_for(name: str, runtime: Mapping[str, Any] | None = None) -> Harness:
    """The harness an agent whose runtime names `name` runs on: the routed one, if any; in a
    terminal pane when the runtime says "placement": "pane"."""
    routed = _routed.get()
    if routed is not None:
        return routed
    harness = own_harness(name)
    if runtime is not None and runtime.get("placement") == "pane":
        from .panes import PaneHarness

        return PaneHarness(harness)
    return harness


def own_harness(name: str) -> Harness:
    """The harness named `name` itself, routed or not."""
    if name in _registered:
        return _registered[name]
    module_name = f"{__package__}.harness_{name}"
    if not _NAME.fullmatch(name) or importlib.util.find_spec(module_name) is None:
        raise NoHarness(
            f"there is no harness named {name!r}; this awf has {', '.join(known()) or 'none'}. "
            'Check the runtime\'s "harness", or upgrade awf for a harness it lacks'
        )
    module = importlib.import_module(module_name)
    harness = getattr(module, "HARNESS", None)
    if harness is None:
        raise NoHarness(f"{module_name} defines no HARNESS")
    register(harness)
    return _registered[name]


def known() -> list[str]:
    names = set(_registered)
    package = importlib.import_module(__package__ or "awf.agents")
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("harness_"):
            names.add(info.name.removeprefix("harness_"))
    return sorted(names)
