"""Every record kind is typed once, in step with its JSON Schema, and known to every reader."""

from __future__ import annotations

import json
from typing import Any

import pytest

from awf.record import entries, file_kinds, schemas
from awf.record.make_validators import schema_kinds
from awf.view import log_text, replay


def _keys(shape: Any) -> tuple[set[str], set[str]]:
    """A TypedDict's keys, and those it requires."""
    return set(shape.__required_keys__ | shape.__optional_keys__), set(shape.__required_keys__)


def _named(parts: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """What schema parts name for an object: its properties, and those it requires."""
    properties: set[str] = set()
    required: set[str] = set()
    for part in parts:
        properties |= set(part.get("properties", {}))
        required |= set(part.get("required", []))
    return properties | required, required


def test_every_kind_the_log_schema_names_has_one_typed_shape() -> None:
    assert set(entries.SHAPES) == set(schemas.log_entry_kinds())


@pytest.mark.parametrize("kind", schemas.log_entry_kinds())
def test_each_kind_of_log_line_is_typed_key_for_key_as_its_schema_says(kind: str) -> None:
    base, *branches = schemas.log_entry_schema(kind)["allOf"]
    keys, required = _keys(entries.SHAPES[kind])
    named, named_required = _named([{"required": base["required"]}, *branches])
    # What every line may hold (`attempt`) is named by the base; a kind types it when it has it.
    allowed = named | set(base["properties"])
    assert required == named_required, f"{kind}: the shape requires {sorted(required)}, not {sorted(named_required)}"
    assert named <= keys, f"{kind}: the schema names {sorted(named - keys)}, which the shape lacks"
    assert keys <= allowed, f"{kind}: the shape has {sorted(keys - allowed)}, which the schema does not name"


def test_every_record_file_awf_writes_has_one_typed_shape() -> None:
    assert set(file_kinds.SHAPES) | file_kinds.WRITTEN_BY_PEOPLE | file_kinds.PRINTED == set(schema_kinds())


@pytest.mark.parametrize("kind", sorted(file_kinds.SHAPES))
def test_each_record_file_is_typed_key_for_key_as_its_schema_says(kind: str) -> None:
    schema = json.loads(schemas.schema_text(f"{kind}.schema.json"))
    keys, required = _keys(file_kinds.SHAPES[kind])
    assert (keys, required) == _named([schema])


@pytest.mark.parametrize("kind", sorted(entries.KINDS))
def test_each_kind_of_log_line_has_its_words_in_awf_logs(kind: str) -> None:
    assert kind in log_text.FORMATTERS, f"add how `awf logs` shows a {kind} line to awf/view/log_text.py"


@pytest.mark.parametrize("kind", sorted(entries.KINDS))
def test_each_kind_of_log_line_has_a_decision_in_the_replay(kind: str) -> None:
    told, passed_over = kind in replay.TOLD, kind in replay.PASSED_OVER
    assert told or passed_over, (
        f"say in awf/view/replay.py what `awf watch` does with a {kind} line: tell the view, or pass it over"
    )
    assert not (told and passed_over), f"awf/view/replay.py both tells and passes over {kind} lines"


def test_a_line_as_its_constructor_makes_it_fits_the_schema(tmp_path: Any) -> None:
    line = entries.stage_start(attempt=1, stage="plan")
    assert list(line)[:3] == ["version", "kind", "at"]  # readers tell a line's kind off its first bytes
    schemas.check("log-entry", line, tmp_path / "run.jsonl")
    record = file_kinds.stage_record(stage="plan", outcome="succeeded", origin="ran", attempt=1)
    schemas.check("stage", record, tmp_path / "plan.json")
