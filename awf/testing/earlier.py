"""Earlier attempts in a test: stage records written as an attempt would have, and read off a real run.

`earlier={"stages": {"plan": {...}}}` becomes a run folder whose attempt 1 recorded those stages,
so the test's attempt is a real continue: the stage plan checks each record against the stage's
result schema as the workflow enters it, exactly as a continue after a real attempt does.
`recorded(path)` gives the same shape from a run on disk, with its records whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from ..engine.workflow import Workflow
from ..record import entries, file_kinds, folder
from ..record.clock import now_iso
from ..record.errors import RecordError
from ..record.file_kinds import StageRecord
from ..record.layout import RunPaths
from ..record.liveness import process_start
from ..record.names import stage_name_problem


def recorded(path: str | Path) -> dict[str, Any]:
    """The current stage records of the run in `path` (`.awf/runs/{workflow}/{id}`), to give as
    `earlier=`: {"stages": {name: value of each succeeded record}, "records": {name: record}}."""
    run_dir = Path(path).expanduser().absolute()
    if not (run_dir / "run.jsonl").is_file():
        raise ValueError(f"{path} is not a run's folder (it has no run.jsonl); give .awf/runs/WORKFLOW/ID")
    paths = RunPaths(run_dir.parent.parent, run_dir.parent.name, run_dir.name)
    records: dict[str, StageRecord] = {}
    for name, record in folder.read_stage_records(paths).items():
        if isinstance(record, RecordError):
            raise ValueError(f"run {paths.name}: stage {name}'s record cannot be read: {record}")
        records[name] = record
    stages = {name: record["value"] for name, record in records.items() if record["outcome"] == "succeeded"}
    return {"stages": stages, "records": records}


def as_json(value: Any, what: str) -> Any:
    """`value` as a record holds it: plain JSON, with an instance of a Python type (a pydantic model,
    a dataclass) as its JSON form. Raises ValueError, starting with `what`, when no record can hold it."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as error:
        problem: Exception = error
    try:
        from ..engine.typed import plain_json

        return json.loads(json.dumps(plain_json(value), allow_nan=False))
    except ImportError:
        pass  # no pydantic: the value is not JSON, and nothing here can make it so
    except (TypeError, ValueError) as error:
        problem = error
    except Exception as error:  # pydantic cannot write it either
        problem = error
    raise ValueError(f"{what} is not JSON, no record can hold it: {problem}") from None


def earlier_records(earlier: Any, workflow: Workflow[Any]) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """The records `earlier` stands for, and the names of those the test gave itself (not read
    off a run): a record of those its stage cannot reuse is the test's mistake."""
    if not isinstance(earlier, Mapping) or not set(earlier) <= {"stages", "records"}:
        raise TypeError(
            f'earlier= is {{"stages": {{NAME: VALUE, ...}}}}, or recorded(PATH) of a run on disk, not {earlier!r}'
        )
    given = earlier.get("stages") or {}
    read = dict(earlier.get("records") or {})
    if not isinstance(given, Mapping) or not isinstance(read, Mapping):
        raise TypeError('earlier["stages"] is a dict of values by stage name')
    records = {name: dict(record) for name, record in read.items()}
    own: set[str] = set()
    for name, value in given.items():
        problem = stage_name_problem(name) if isinstance(name, str) else f"{name!r} is not a stage name"
        if problem:
            raise ValueError(f"earlier: {problem}")
        value = as_json(value, f"earlier: stage {name}'s value")
        if name in records and records[name].get("outcome") == "succeeded" and records[name].get("value") == value:
            continue  # as the run recorded it
        own.add(name)
        records[name] = {
            **file_kinds.stage_record(
                stage=name,
                outcome="succeeded",
                origin="ran",
                attempt=1,
                started=now_iso(),
                ended=now_iso(),
                has_result=value is not None,
                value=value,
                summary=None,
                reason=None,
                workflow_version=workflow.version,
            )
        }
    return records, own


def write_earlier(paths: RunPaths, run_fields: entries.RunFields, records: dict[str, dict[str, Any]]) -> int:
    """Make the run's folder with the attempts that wrote `records`; the number of the last one."""
    claim = folder.create_run(paths, run_fields)
    try:
        last = max([int(record.get("attempt", 1)) for record in records.values()] or [1])
        for number in range(1, last + 1):
            mine = [record for record in records.values() if record.get("attempt", 1) == number]
            entries.append(
                paths.log,
                entries.attempt_start(
                    attempt=number,
                    pid=os.getpid(),
                    process_start=process_start(os.getpid()),
                    file=run_fields.get("file", ""),
                    workflow_version=run_fields.get("workflow_version"),
                    flags={"continue": number > 1, "from_stage": None, "values": None, "timeout": None},
                    deadline=None,
                ),
            )
            for record in mine:
                entries.append(paths.log, entries.stage_start(attempt=number, stage=record["stage"]))
                # Made by file_kinds.stage_record, or read off a run, where its schema was checked.
                folder.write_stage_record(paths, cast(file_kinds.StageRecord, record))
            entries.append(
                paths.log,
                entries.attempt_end(
                    attempt=number,
                    outcome="stopped",
                    exit_code=3,
                    stage=None,
                    reason="an earlier attempt a test gave (awf.testing): its stage records are as given",
                    after=None,
                    ran=[record["stage"] for record in mine],
                    go_on=None,
                ),
            )
    finally:
        claim.release()
    return last
