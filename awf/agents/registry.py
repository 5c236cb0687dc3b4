"""Which harness runs an agent: the ones registered, or the module `awf.agents.harness_{name}`.

A harness is added by writing that module with a `HARNESS` (a Harness subclass or instance):
nothing here needs to change. `register` adds one from elsewhere (a plugin, a test).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re

from .harness import Harness

_registered: dict[str, Harness] = {}
_NAME = re.compile(r"[a-z][a-z0-9_]*")


class NoHarness(Exception):
    """There is no harness of that name: the turn fails with this reason."""


def register(harness: Harness | type[Harness]) -> None:
    instance = harness() if isinstance(harness, type) else harness
    if not instance.name:
        raise ValueError(f"{instance!r} has no name")
    _registered[instance.name] = instance


def harness_for(name: str) -> Harness:
    if name in _registered:
        return _registered[name]
    module_name = f"{__package__}.harness_{name}"
    if not _NAME.fullmatch(name) or importlib.util.find_spec(module_name) is None:
        raise NoHarness(
            f"there is no harness named {name!r}; this awf has {', '.join(known()) or 'none'}. "
            "Check the runtime's \"harness\", or upgrade awf for a harness it lacks"
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
