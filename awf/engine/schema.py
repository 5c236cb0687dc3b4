"""Result schemas: JSON Schema dicts, `.json` files beside the workflow, or Python types; compiled once."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..record.schemas import JsonSchema, every_problem
from .errors import WorkflowError

if TYPE_CHECKING:
    from .typed import Typed


@dataclass(frozen=True)
class Schema:
    """A compiled result schema and the text it came from.

    A value is recorded in its plain JSON form; `load` makes the value a workflow is handed from
    it (for a Python type, an instance of the type), and `dump` makes the plain form of what a
    stage's work returned.
    """

    schema: JsonSchema
    text: str  # canonical JSON: the cache key, and what a record can be compared with
    source: str  # where it came from, for messages
    typed: Typed | None = None  # the Python type it was made from, if any

    def load(self, plain: Any) -> tuple[Any, str | None]:
        """The value handed to the workflow for the plain JSON `plain`, or why it does not fit."""
        problem = self.problem(plain)
        if problem or self.typed is None:
            return plain, problem
        return self.typed.load(plain)

    def dump(self, value: Any) -> tuple[Any, str | None]:
        """The plain JSON form of `value`, or why it has none; a dict schema's value is its own form."""
        return (value, None) if self.typed is None else self.typed.dump(value)

    def problem(self, value: Any) -> str | None:
        """Why `value` does not fit (every problem, joined), or None when it does."""
        import fastjsonschema

        try:
            _compiled(self.text)(value)
        except fastjsonschema.JsonSchemaValueException as error:
            return "; ".join(every_problem(self.schema, value)) or _readable(error)
        return None


def _readable(error: Exception) -> str:
    message = getattr(error, "message", str(error))
    for prefix in ("data.", "data[", "data "):
        if message.startswith(prefix):
            return "$" + message[4:]
    return message


@cache
def _compiled(text: str) -> Callable[[Any], Any]:
    import fastjsonschema

    return fastjsonschema.compile(json.loads(text))


# A workflow names the same schema object (or file, or type) at every entry of a stage, and a loop
# may enter thousands of stages: each is made into a Schema once.
_loaded: dict[Any, tuple[Any, Schema]] = {}
_types: dict[Any, Schema] = {}


def load_schema(spec: Any, base: Path | None, what: str) -> Schema:
    """Compile `spec`: a JSON Schema dict, a path to a `.json` file (relative to `base`), or a
    Python type (read with pydantic, imported only then)."""
    if isinstance(spec, dict):
        known = _loaded.get(id(spec))
        if known is not None and known[0] is spec:
            return known[1]
        schema = _load(spec, base, what)
        _loaded[id(spec)] = (spec, schema)
        return schema
    if isinstance(spec, (str, Path)):
        path = Path(spec) if Path(spec).is_absolute() or base is None else base / spec
        try:
            key = (str(path), path.stat().st_mtime_ns)
        except OSError:
            return _load(spec, base, what)
        known = _loaded.get(key)
        if known is not None:
            return known[1]
        schema = _load(spec, base, what)
        _loaded[key] = (spec, schema)
        return schema
    if spec is not None and not isinstance(spec, (bool, int, float, list, tuple)):
        return _load_type(spec, what)
    return _load(spec, base, what)


def _load_type(spec: Any, what: str) -> Schema:
    try:
        known = _types.get(spec)
    except TypeError:  # an unhashable type form: made each time
        known = None
    if known is not None:
        return known
    from .typed import Typed, looks_like_type

    if not looks_like_type(spec):
        return _load(spec, None, what)
    typed = Typed(spec, what)
    schema = _load(typed.schema, None, what, source=f"the type {typed.name}")
    schema = Schema(schema.schema, schema.text, schema.source, typed)
    try:
        _types[spec] = schema
    except TypeError:
        pass
    return schema


def _load(spec: Any, base: Path | None, what: str, source: str = "a dict") -> Schema:
    if isinstance(spec, (str, Path)):
        path = Path(spec)
        if not path.is_absolute() and base is not None:
            path = base / path
        source = str(path)
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise WorkflowError(f"{what}: schema file {path} does not exist") from None
        except (OSError, ValueError) as error:
            raise WorkflowError(f"{what}: schema file {path} cannot be read as JSON: {error}") from None
    if not isinstance(spec, dict):
        kind = type(spec).__name__
        raise WorkflowError(
            f"{what}: a schema is a Python type (a pydantic model, a dataclass, a TypedDict), "
            f"a JSON Schema dict or a path to a .json file, not {kind}"
        )
    try:
        text = json.dumps(spec, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise WorkflowError(f"{what}: the schema is not JSON: {error}") from None
    import fastjsonschema

    try:
        _compiled(text)
    except fastjsonschema.JsonSchemaDefinitionException as error:
        raise WorkflowError(f"{what}: the schema from {source} is not a valid JSON Schema: {error}") from None
    return Schema(spec, text, source)


def json_problem(value: Any, path: str = "$") -> str | None:
    """Why `value` would not come back the same from JSON, or None when it would."""
    if value is None or isinstance(value, (bool, str, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value}, which JSON cannot hold"
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = json_problem(item, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r}, a {type(key).__name__}; JSON keys are strings"
            problem = json_problem(item, f"{path}.{key}")
            if problem:
                return problem
        return None
    kind = type(value).__name__
    hint = " (use a list)" if isinstance(value, tuple) else ""
    return f"{path} is a {kind}{hint}; a recorded value is made of dicts, lists, strings, numbers, booleans and None"
