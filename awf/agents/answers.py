"""Reading an answer: text to a value, checked against the turn's schema, every problem named.

The same checks serve `awf answer` and an answer an agent printed (the exec runtime's stdout),
so an agent gets the same verdict whichever way it answers.
"""

from __future__ import annotations

import json
from typing import Any

from ..record.schemas import JsonSchema

MAX_PROBLEM = 300


def read_answer(text: str, schema: JsonSchema | None) -> tuple[Any, list[str]]:
    """The value `text` gives, and every problem with it: empty when the answer fits.

    Without a schema the answer is text: a JSON string is decoded, anything else is taken as
    it is written. With one, it must be JSON that fits the schema.
    """
    if schema is None:
        stripped = text.strip()
        if not stripped:
            return None, ["the answer is empty: give your answer as text"]
        try:
            value = json.loads(stripped)
        except ValueError:
            return stripped, []
        return (value, []) if isinstance(value, str) else (stripped, [])
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        return None, [f"the answer is not JSON: {error.msg} at line {error.lineno} column {error.colno}"]
    except ValueError as error:
        return None, [f"the answer is not JSON: {error}"]
    return value, schema_problems(schema, value)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def schema_problems(schema: JsonSchema, value: Any) -> list[str]:
    """Every way `value` fails `schema`, each with where it is ($.steps[2]) and what is wrong."""
    from jsonschema import Draft7Validator, validators  # deferred: only a turn with a schema needs it

    checker = validators.validator_for(schema, default=Draft7Validator)(schema)
    errors = sorted(checker.iter_errors(value), key=lambda error: [str(part) for part in error.absolute_path])
    return [f"{where(error.absolute_path)}: {_short(error.message)}" for error in errors]


def where(path: Any) -> str:
    text = "$"
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _short(message: str) -> str:
    return message if len(message) <= MAX_PROBLEM else message[: MAX_PROBLEM - 1] + "…"


def last_document(text: str) -> str | None:
    """The JSON document that ends `text`, starting on a line of its own, or None.

    An agent may print what it did and then its answer: the answer is the last thing printed.
    Lines are tried from the last one up, so a long output costs a scan of its lines, no more.
    """
    stripped = text.rstrip()
    decoder = json.JSONDecoder()
    end = len(stripped)
    while end > 0:
        start = stripped.rfind("\n", 0, end) + 1
        line = stripped[start:end]
        first = start + len(line) - len(line.lstrip())
        if first < end and stripped[first] in '{["':
            try:
                _, document_end = decoder.raw_decode(stripped, first)
            except ValueError:
                document_end = -1
            if document_end == len(stripped):
                return stripped[first:]
        end = start - 1
    return None
