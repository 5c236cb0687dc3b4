"""Schemas as people read them, and stand-in values that fit them.

`type_text` gives the short type the start part-way stop lists (`{doc: string}`,
`{rounds: integer ≥ 1, ledger: string}`). `stand_in` makes the smallest value that fits a
schema, so the look-ahead can run the code between stages without any stage's work.
"""

from __future__ import annotations

import json
from typing import Any


def _resolved(schema: Any, root: Any) -> Any:
    """`schema`, or what its local `$ref` (`#/$defs/Finding`, as pydantic writes them) points to."""
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if not isinstance(ref, str) or not ref.startswith("#/") or not isinstance(root, dict):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(target, dict) or part not in target:
            return schema
        target = target[part]
    return target


def type_text(schema: Any, depth: int = 0, root: Any = None) -> str:
    """A one-line reading of a JSON Schema."""
    root = schema if root is None else root
    schema = _resolved(schema, root)
    if not isinstance(schema, dict):
        return "any" if schema is True or schema == {} else "nothing"
    if depth > 4:
        return "…"
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(item) for item in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(type_text(option, depth + 1, root) for option in schema[key])
    if "allOf" in schema:
        return " & ".join(type_text(part, depth + 1, root) for part in schema["allOf"])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(type_text({**schema, "type": one}, depth + 1, root) for one in kind)
    return _kind_text(schema, kind, depth, root)


def _kind_text(schema: dict[str, Any], kind: Any, depth: int, root: Any) -> str:
    """A one-line reading of a schema of one `type` (or of none)."""
    if kind == "object" or (kind is None and "properties" in schema):
        return _object_text(schema, depth, root)
    if kind == "array":
        items = schema.get("items")
        text = f"[{type_text(items, depth + 1, root)}]" if isinstance(items, dict) else "[any]"
        return text + _bounds(schema, "minItems", "maxItems", "items")
    if kind in ("integer", "number"):
        return str(kind) + _number_bounds(schema)
    if kind == "string":
        return (
            "string"
            + _bounds(schema, "minLength", "maxLength", "chars")
            + (f" matching {schema['pattern']}" if "pattern" in schema else "")
        )
    return kind or "any"


def _object_text(schema: dict[str, Any], depth: int, root: Any) -> str:
    required = set(schema.get("required") or [])
    parts = []
    for name, sub in (schema.get("properties") or {}).items():
        mark = "" if name in required else "?"
        parts.append(f"{name}{mark}: {type_text(sub, depth + 1, root)}")
    for name in sorted(required - set(schema.get("properties") or {})):
        parts.append(f"{name}: any")
    return "{" + ", ".join(parts) + "}"


def _number_bounds(schema: dict[str, Any]) -> str:
    parts = []
    if "minimum" in schema:
        parts.append(f"≥ {schema['minimum']}")
    if "exclusiveMinimum" in schema and not isinstance(schema["exclusiveMinimum"], bool):
        parts.append(f"> {schema['exclusiveMinimum']}")
    if "maximum" in schema:
        parts.append(f"≤ {schema['maximum']}")
    if "exclusiveMaximum" in schema and not isinstance(schema["exclusiveMaximum"], bool):
        parts.append(f"< {schema['exclusiveMaximum']}")
    return (" " + " ".join(parts)) if parts else ""


def _bounds(schema: dict[str, Any], low: str, high: str, unit: str) -> str:
    if low in schema and high in schema:
        return f" ({schema[low]}..{schema[high]} {unit})"
    if schema.get(low):
        return f" (≥ {schema[low]} {unit})"
    if high in schema:
        return f" (≤ {schema[high]} {unit})"
    return ""


def stand_in(schema: Any, depth: int = 0, root: Any = None) -> Any:
    """The smallest plain value that fits `schema`, as well as can be guessed without solving it."""
    root = schema if root is None else root
    schema = _resolved(schema, root)
    if not isinstance(schema, dict) or depth > 8:
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return stand_in(schema[key][0], depth + 1, root)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            if isinstance(part, dict):
                merged.update(part)
        return stand_in(merged, depth + 1, root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    return _stand_in_of_kind(schema, kind, depth, root)


def _stand_in_of_kind(schema: dict[str, Any], kind: Any, depth: int, root: Any) -> Any:
    """The smallest plain value of one `type` (or of none) that fits `schema`."""
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties") or {}
        return {name: stand_in(properties.get(name, {}), depth + 1, root) for name in schema.get("required") or []}
    if kind == "array":
        count = schema.get("minItems", 0)
        return [stand_in(schema.get("items", {}), depth + 1, root) for _ in range(count)]
    if kind in ("integer", "number"):
        return _least_number(schema)
    if kind == "string":
        return "x" * schema.get("minLength", 0)
    if kind == "boolean":
        return False
    return None


def _least_number(schema: dict[str, Any]) -> Any:
    if "minimum" in schema:
        return schema["minimum"]
    if "exclusiveMinimum" in schema and not isinstance(schema["exclusiveMinimum"], bool):
        return schema["exclusiveMinimum"] + 1
    if "maximum" in schema and schema["maximum"] < 0:
        return schema["maximum"]
    return 0
