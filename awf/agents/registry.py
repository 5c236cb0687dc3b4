"""Which harness runs an agent: the ones registered, the module `awf.agents.harnesses.{name}`, or
a plugin: an installed package's entry point in the group `awf.harnesses`.

A harness is added by writing that module with a `HARNESS` (a Harness subclass or instance):
nothing here needs to change. A package of its own adds one by naming it in its entry points
(`[project.entry-points."awf.harnesses"] name = "package.module:HARNESS"`); `register` adds one
from elsewhere (a test). awf's own harness wins over a plugin of the same name.

`routed_to(harness)` makes every agent opened under it run on that one harness, whatever its
runtime names: awf.testing runs a workflow's agents ("claude", "codex", exec ...) as scripts
that way, through the same turns, channel and records as real ones.
"""

from __future__ import annotations

import importlib
import importlib.metadata
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
GROUP = "awf.harnesses"


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
    module_name = f"{__package__}.harnesses.{name}"
    if _NAME.fullmatch(name) and importlib.util.find_spec(module_name) is not None:
        module = importlib.import_module(module_name)
        harness = getattr(module, "HARNESS", None)
        if harness is None:
            raise NoHarness(f"{module_name} defines no HARNESS")
        register(harness)
        return _registered[name]
    plugin = _plugins().get(name)
    if plugin is None:
        raise NoHarness(
            f"there is no harness named {name!r}; this awf has {', '.join(known()) or 'none'}. "
            'Check the runtime\'s "harness", install the package that adds it, or upgrade awf for a harness it lacks'
        )
    _register_plugin(name, plugin)
    return _registered[name]


def _plugins() -> dict[str, importlib.metadata.EntryPoint]:
    """The harnesses installed packages add, by name. Read only when a name is not awf's own, so
    an attempt on awf's harnesses never scans the installed packages."""
    return {point.name: point for point in importlib.metadata.entry_points(group=GROUP)}


def _register_plugin(name: str, point: importlib.metadata.EntryPoint) -> None:
    where = f"the harness {name!r} of {_package_of(point)} ({point.value})"
    try:
        loaded = point.load()
    except Exception as error:  # a plugin's own import may raise anything: name it, never crash
        raise NoHarness(f"{where} cannot be loaded: {type(error).__name__}: {error}") from None
    harness = getattr(loaded, "HARNESS", loaded)  # a module that defines HARNESS, or the harness itself
    is_harness = isinstance(harness, Harness) or (isinstance(harness, type) and issubclass(harness, Harness))
    if not is_harness:
        raise NoHarness(f"{where} is not a Harness: name a Harness subclass, an instance, or a module with HARNESS")
    instance = harness() if isinstance(harness, type) else harness
    if instance.name != name:
        raise NoHarness(f"{where} is named {instance.name!r}: its entry point and its `name` must agree")
    from .kit import capability_problems

    problems = capability_problems(instance)
    if problems:
        raise NoHarness(f"{where} does not keep its word: {'; '.join(problems)}")
    register(instance)


def _package_of(point: importlib.metadata.EntryPoint) -> str:
    distribution = point.dist
    return f"package {distribution.name} {distribution.version}" if distribution is not None else "a package"


def known() -> list[str]:
    names = set(_registered)
    package = importlib.import_module(f"{__package__ or 'awf.agents'}.harnesses")
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.endswith("_usage"):  # the session readers beside the harnesses
            names.add(info.name)
    return sorted(names | set(_plugins()))
