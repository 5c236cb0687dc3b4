"""Python types as schemas: a pydantic model, a dataclass, a TypedDict, or any type pydantic reads.

The JSON Schema comes from the type (what an agent is shown, what a record and --values are
checked against); a value is recorded in its plain JSON form and handed back as an instance of
the type. Imported only when a workflow names a type, so a workflow of JSON Schema dicts never
imports pydantic (an optional dependency: `pip install 'awf[pydantic]'`).
"""

from __future__ import annotations

import json
from typing import Any

from ..record.schemas import JsonSchema
from .errors import MissingPackage, WorkflowError

INSTALL = "Python types as schemas need pydantic, which is not installed: pip install 'awf[pydantic]'"


def looks_like_type(spec: Any) -> bool:
    """Whether `spec` is meant as a Python type (a class, list[X], Literal[...], X | None)."""
    if isinstance(spec, type):
        return True
    module = getattr(type(spec), "__module__", "")
    return module in ("typing", "types", "typing_extensions") or hasattr(spec, "__origin__")


def type_name(spec: Any) -> str:
    name = getattr(spec, "__name__", None)
    return name if isinstance(name, str) and isinstance(spec, type) else repr(spec).replace("typing.", "")


class Typed:
    """A type's adapter: its JSON Schema, and values to and from their plain JSON form."""

    def __init__(self, spec: Any, what: str) -> None:
        try:
            from pydantic import TypeAdapter
        except ImportError:
            raise MissingPackage(
                f"{what}: {type_name(spec)} is a Python type, and awf reads types with pydantic, "
                "which is not installed",
                install=INSTALL,
            ) from None
        from pydantic import PydanticUserError
        from pydantic.errors import PydanticSchemaGenerationError

        self.spec = spec
        self.name: str = type_name(spec)
        try:
            self.adapter: Any = TypeAdapter(spec)
            self.schema: JsonSchema = self.adapter.json_schema()
        except (PydanticUserError, PydanticSchemaGenerationError, TypeError, ValueError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise WorkflowError(f"{what}: the type {self.name} cannot be made a JSON Schema: {first}") from None

    def load(self, plain: Any) -> tuple[Any, str | None]:
        """An instance of the type made from its plain JSON form, or why it cannot be made."""
        from pydantic import ValidationError

        try:
            # As JSON, so a strict model reads the form it was written in (a date as its string).
            return self.adapter.validate_json(json.dumps(plain, allow_nan=False)), None
        except ValidationError as error:
            return None, problems_text(error)

    def dump(self, value: Any) -> tuple[Any, str | None]:
        """The plain JSON form of `value` (an instance of the type, or what it is made from)."""
        from pydantic import ValidationError
        from pydantic_core import PydanticSerializationError

        try:
            checked = self.adapter.validate_python(value)
            return self.adapter.dump_python(checked, mode="json", by_alias=True), None
        except ValidationError as error:
            return None, problems_text(error)
        except PydanticSerializationError as error:
            return None, f"$: {self.name} cannot be written as JSON: {error}"


def problems_text(error: Any) -> str:
    """pydantic's errors as awf names them: `$.findings[0].file: Field required`, joined."""
    parts = []
    for item in error.errors(include_url=False):
        where = "$"
        for part in item.get("loc", ()):
            where += f"[{part}]" if isinstance(part, int) else f".{part}"
        parts.append(f"{where}: {item.get('msg', 'does not fit')}")
    return "; ".join(parts) or str(error)


def plain_json(value: Any) -> Any:
    """Instances of types (models, dataclasses) inside `value` as plain JSON, when pydantic is loaded."""
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, by_alias=True)
