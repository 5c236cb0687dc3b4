"""The JSON Schemas of the record's files, and the validators that check records against them.

The validators ship pre-generated (awf/record/_validators/, a module a kind): compiling a
schema costs milliseconds, and every attempt checks several kinds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeAlias

from .errors import RecordError

# A JSON Schema: a stage's result, an agent's answer, an event's data. Its shape is JSON Schema's
# own, not awf's: held as it came, read only by a validator.
JsonSchema: TypeAlias = dict[str, Any]

SCHEMA_BASE = "https://awf.dev/schemas/"
FORMAT_VERSION = 1


def schema_text(name: str) -> str:
    """The text of `schemas/{name}` as shipped in the package."""
    from importlib import resources  # deferred: the shipped validators need no schema text

    return resources.files("awf.schemas").joinpath(name).read_text(encoding="utf-8")


def load_by_uri(uri: str) -> dict[str, Any]:
    """A schema another one refers to: awf's schemas refer only to each other."""
    if not uri.startswith(SCHEMA_BASE):
        raise ValueError(f"awf's schemas refer only to their own files, not {uri}")
    schema: dict[str, Any] = json.loads(schema_text(uri.removeprefix(SCHEMA_BASE)))
    return schema


def log_entry_kinds() -> list[str]:
    """The kinds of line run.jsonl may hold."""
    kinds: list[str] = json.loads(schema_text("log-entry.schema.json"))["properties"]["kind"]["enum"]
    return kinds


def log_entry_schema(kind: str) -> dict[str, Any]:
    """The log-entry schema cut down to one kind: its base and the one branch that applies.

    The whole schema tries every kind's branch on every line; a history of thousands of lines
    is read at each attempt's start, so each line is checked against its own kind alone.
    """
    whole = json.loads(schema_text("log-entry.schema.json"))
    branches = whole.pop("allOf", [])
    parts = [whole]
    for branch in branches:
        condition = branch.get("if", {}).get("properties", {}).get("kind", {})
        if condition.get("const") == kind or kind in condition.get("enum", []):
            parts.append(branch["then"])
    base = {"$id": whole.pop("$id"), "$schema": whole.pop("$schema")}
    return {**base, "allOf": parts}


def module_for(kind: str, line_kind: str | None = None) -> str:
    """The module of awf/record/_validators/ that checks `kind` (with `line_kind`: one kind of
    line of run.jsonl), made by `python -m awf.record.make_validators`."""
    name = kind.replace("-", "_")
    return f"{name}__{line_kind.replace('-', '_')}" if line_kind is not None else name


def _generated(module: str) -> Callable[[Any], Any] | None:
    """The shipped validator in `module`, or None when it cannot be imported (then it is
    compiled here, as it is needed)."""
    from importlib import import_module

    try:
        validate: Callable[[Any], Any] = import_module(f"{__package__}._validators.{module}").validate
        return validate
    except ImportError:
        return None


def _compile(schema: dict[str, Any]) -> Callable[[Any], Any]:
    import fastjsonschema  # deferred: read-only commands that never validate skip the import

    return fastjsonschema.compile(schema, handlers={"https": load_by_uri})


@cache
def validator(kind: str) -> Callable[[Any], Any]:
    """The validator of one record kind (`stage`, `log-entry`, `out`, …)."""
    return _generated(module_for(kind)) or _compile(json.loads(schema_text(f"{kind}.schema.json")))


@cache
def _log_entry_validator(kind: str) -> Callable[[Any], Any]:
    """The validator of one kind of line of run.jsonl (see log_entry_schema)."""
    return _generated(module_for("log-entry", kind)) or _compile(log_entry_schema(kind))


def readable_problem(error: Exception) -> str:
    """fastjsonschema names the root `data`; people read `$`."""
    message = getattr(error, "message", str(error))
    return message.replace("data.", "$.", 1).replace("data[", "$[", 1).replace("data ", "$ ", 1)


def check(kind: str, obj: Any, path: Path | str, where: str = "") -> None:
    """Raise a RecordError naming `path` unless `obj` fits the schema of `kind`."""
    if isinstance(obj, dict) and isinstance(obj.get("version"), int) and obj["version"] > FORMAT_VERSION:
        raise RecordError(
            path,
            f"{where}was written in format version {obj['version']}; this awf reads version {FORMAT_VERSION}",
            "upgrade awf to read it",
        )
    import fastjsonschema

    if kind == "log-entry" and isinstance(obj, dict) and isinstance(obj.get("kind"), str):
        check_with = _log_entry_validator(obj["kind"])
    else:
        check_with = validator(kind)
    try:
        check_with(obj)
    except fastjsonschema.JsonSchemaValueException as error:
        raise RecordError(path, f"{where}does not fit {kind}.schema.json: {readable_problem(error)}") from None


def every_problem(schema: dict[str, Any], value: Any) -> list[str]:
    """Every way `value` misses `schema`, each with the path to it, so one reading fixes them all.

    fastjsonschema, which checks every record on the fast path, stops at the first problem;
    this is for the error path only, where a person or an agent needs the whole list.
    """
    import jsonschema

    validator_class = jsonschema.validators.validator_for(schema)
    problems = []
    for error in sorted(validator_class(schema).iter_errors(value), key=lambda e: list(e.absolute_path)):
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        problems.append(f"{where}: {error.message}")
    return problems
