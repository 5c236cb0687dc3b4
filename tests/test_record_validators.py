"""The record's validators ship pre-generated; they must match the schemas in schemas/."""

from __future__ import annotations

import json
from importlib import import_module

import fastjsonschema
import pytest

from awf.record import schemas
from awf.record.errors import RecordError
from awf.record.make_validators import COMMAND, PACKAGE, generated_files, schema_kinds


def test_the_shipped_validators_are_generated_from_the_schemas_as_they_are() -> None:
    shipped = {path.name: path.read_text(encoding="utf-8") for path in PACKAGE.glob("*.py")}
    assert shipped == generated_files(), (
        "awf/record/_validators/ does not match schemas/ (a schema changed, or fastjsonschema did): "
        f"run `{COMMAND}` and commit the result"
    )


def test_every_kind_is_checked_by_the_generated_code() -> None:
    for kind in schema_kinds():
        module = import_module(f"awf.record._validators.{schemas.module_for(kind)}")
        assert schemas.validator(kind) is module.validate
    for kind in schemas.log_entry_kinds():
        module = import_module(f"awf.record._validators.{schemas.module_for('log-entry', kind)}")
        assert schemas._log_entry_validator(kind) is module.validate


GOOD_STAGE = {
    "version": 1,
    "stage": "plan",
    "outcome": "succeeded",
    "origin": "ran",
    "attempt": 1,
    "started": None,
    "ended": "2026-01-01T00:00:00.000+00:00",
    "has_result": True,
    "value": {"a": 1},
    "summary": None,
    "reason": None,
    "workflow_version": None,
}
BAD_RECORDS = [
    ("stage", {**GOOD_STAGE, "attempt": 0}),
    ("stage", {key: value for key, value in GOOD_STAGE.items() if key != "origin"}),
    ("stage", {**GOOD_STAGE, "stage": "Not A Name"}),
    (
        "log-entry",
        {
            "version": 1,
            "kind": "stage",
            "at": "2026-01-01T00:00:00.000+00:00",
            "attempt": 1,
            "stage": "plan",
            "record": {**GOOD_STAGE, "outcome": "maybe"},
        },
    ),
    ("log-entry", {"version": 1, "kind": "attempt-end", "at": "2026-01-01T00:00:00.000+00:00", "attempt": 1}),
    ("log-entry", {"version": 1, "kind": "no-such-kind", "at": "2026-01-01T00:00:00.000+00:00"}),
]


@pytest.mark.parametrize(("kind", "record"), BAD_RECORDS)
def test_generated_and_compiled_validators_say_the_same(kind: str, record: dict, tmp_path) -> None:
    path = tmp_path / "record.json"
    with pytest.raises(RecordError) as generated:
        schemas.check(kind, record, path)
    schema = (
        schemas.log_entry_schema(record["kind"])
        if kind == "log-entry" and record["kind"] in schemas.log_entry_kinds()
        else json.loads(schemas.schema_text(f"{kind}.schema.json"))
    )
    with pytest.raises(fastjsonschema.JsonSchemaValueException) as compiled:
        fastjsonschema.compile(schema, handlers={"https": schemas.load_by_uri})(record)
    assert str(path) in str(generated.value)
    assert schemas.readable_problem(compiled.value) in str(generated.value)


def test_a_record_that_fits_passes(tmp_path) -> None:
    schemas.check("stage", GOOD_STAGE, tmp_path / "plan.json")
    schemas.check(
        "log-entry",
        {
            "version": 1,
            "kind": "stage",
            "at": "2026-01-01T00:00:00.000+00:00",
            "attempt": 1,
            "stage": "plan",
            "record": GOOD_STAGE,
        },
        tmp_path / "run.jsonl",
    )
