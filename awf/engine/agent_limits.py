"""`--max-agents claude=2,exec=1`: how many turns of each runtime may run at once across a run root.

Given, in order of preference, by `--max-agents`, by `AWF_MAX_AGENTS` in the environment, or by
`[agents] max = {claude = 2}` in an `awf.toml` in the run root. A runtime with no limit runs as
many turns as are asked; a limit of 0 would let none run, so it is refused.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import Refusal

ENV = "AWF_MAX_AGENTS"
CONFIG = "awf.toml"  # in the run root
_RUNTIME = re.compile(r"[a-z][a-z0-9_-]*")


def parse(text: str, where: str) -> dict[str, int]:
    """`claude=2,exec=1` as limits by runtime; Refusal naming `where` it came from when it is not that."""
    limits: dict[str, int] = {}
    for item in text.split(","):
        name, equals, count = item.strip().partition("=")
        name, count = name.strip(), count.strip()
        if not equals or not _RUNTIME.fullmatch(name) or not count.isdigit():
            raise Refusal(f"{where} {text!r}: give runtimes and counts, such as claude=2,exec=1")
        limits[name] = _checked(name, int(count), where)
    return limits


def resolve(given: str | None, root: Path) -> dict[str, int]:
    """The limits an attempt keeps to: `--max-agents`, else AWF_MAX_AGENTS, else the run root's awf.toml."""
    if given is not None:
        return parse(given, "--max-agents")
    if os.environ.get(ENV):
        return parse(os.environ[ENV], ENV)
    return from_config(root / CONFIG)


def from_config(path: Path) -> dict[str, int]:
    """`[agents] max = {claude = 2}` of an awf.toml; no limits when there is no such file."""
    try:
        file = path.open("rb")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise Refusal(f"{path} cannot be read as TOML ({error}); fix it, or remove it") from None
    import tomllib  # a root without an awf.toml, the most of them, never pays for the parser

    with file:
        try:
            config = tomllib.load(file)
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise Refusal(f"{path} cannot be read as TOML ({error}); fix it, or remove it") from None
    agents = config.get("agents", {})
    limits = agents.get("max", {}) if isinstance(agents, dict) else None
    where = f"{path}: [agents] max"
    if not isinstance(limits, dict):
        raise Refusal(f"{where} is a table of runtimes and counts, such as max = {{claude = 2}}")
    checked: dict[str, int] = {}
    for name, count in limits.items():
        if not _RUNTIME.fullmatch(name) or isinstance(count, bool) or not isinstance(count, int):
            raise Refusal(f"{where}: {name} = {count!r}: give a runtime and a count, such as claude = 2")
        checked[name] = _checked(name, count, where)
    return checked


def _checked(name: str, count: int, where: str) -> int:
    if count < 1:
        raise Refusal(f"{where}: {name}={count} would let no {name} turn run; give 1 or more, or leave {name} out")
    return count
