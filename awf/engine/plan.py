"""The stage plan: as the workflow enters each stage, reuse its record, run it, or stop.

Before the start point a stage with a succeeded record is reused, after the checks on version,
result and schema. The start point is the first stage entered with no succeeded record, or the
one --from-stage names. From there every stage runs. This module decides; it writes nothing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..record.errors import RecordError
from ..record.file_kinds import StageRecord, StageRecords
from .schema import Schema
from .workflow import version_key


@dataclass(frozen=True)
class Reuse:
    """Hand back a value without calling the stage's work."""

    value: Any  # as the workflow gets it: for a result that is a Python type, an instance of it
    record: StageRecord | None
    # Or "provided": given with --values, recorded now; or "skipped": --skip-stage kept its recorded value.
    how: Literal["reused", "provided", "skipped"] = "reused"
    plain: Any = None  # as it is recorded: plain JSON


@dataclass(frozen=True)
class Run:
    """Call the stage's work. `start_point` is set on the first stage that runs."""

    start_point: bool
    why: str | None = None
    changed: str | None = None  # a stage redone because its version or cache key changed: what changed
    fresh: bool = False  # a fresh=True stage before the start point: it runs, and is no start point


@dataclass(frozen=True)
class Stamp:
    """What a stage says its value depends on (wf.stage's version= and cache_key=), and what a
    continue does with a succeeded record of another: stop there (the default) or redo from it."""

    version: str | None = None
    cache_key: Any = None
    on_change: str = "stop"  # or "redo"


@dataclass(frozen=True)
class Halt:
    """A stage awf can neither reuse nor run: the attempt stops there, changing no record."""

    reason: str
    redo: str | None = None
    needs: bool = False  # the stage needs a value given with --values
    bad_value: bool = False  # the value given with --values does not fit


Decision = Reuse | Run | Halt


@dataclass
class RedoMark:
    """A --from-stage in a run with events: it holds for the rest of the run.

    Once its stage is reached, a stage entered after it whose record is older than the redo runs
    again, in that attempt and every later one, so a redo that parks part-way is finished by the
    next wake. `before_*` are what the redo's attempt reused on its way to the stage.
    """

    attempt: int
    stage: str
    reached: bool = False
    before_stages: set[str] = field(default_factory=set)
    before_waits: set[str] = field(default_factory=set)


@dataclass
class StagePlan:
    """What this attempt does with each stage it enters."""

    records: StageRecords
    code_version: str | None = None
    from_stage: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    reached: bool = False
    to_stage: str | None = None  # --to-stage: the attempt ends once this stage has succeeded
    skip: frozenset[str] = frozenset()  # --skip-stage: stages whose work is not run, wherever they are
    # A fresh=True stage whose value differs from its record's: the stage after it is the start point.
    fresh_changed: str | None = None
    reused: list[str] = field(default_factory=list)
    entered: list[str] = field(default_factory=list)
    # The same names as a set: whether a name was entered is asked at every stage.
    entered_names: set[str] = field(default_factory=set)
    # A run with events: succeeded records are reused for the rest of the run, whatever version.
    events: bool = False
    redo: RedoMark | None = None
    # The stages attempts with no ending were in when their process went: why a start point is there.
    interrupted_in: dict[str, int] = field(default_factory=dict)
    # The run's stages folder, to name a record's file in a complaint about it.
    stages_dir: Path | None = None

    def enter(self, name: str, schema: Schema | None, stamp: Stamp | None = None, *, fresh: bool = False) -> Decision:
        self.entered.append(name)
        self.entered_names.add(name)
        if name in self.skip:
            return self._skipped(name, schema)
        if self.fresh_changed is not None and not self.reached and not self.events:
            self.reached = True
            return Run(True, f"fresh stage {self.fresh_changed}'s value changed")
        if fresh and (self.events or not self.reached) and name != self.from_stage:
            return Run(False, "fresh=True: it runs on every attempt", fresh=True)
        if self.events and self.redo is not None and self.redo.reached:
            return self._after_redo(name, schema, stamp)
        if self.reached and not self.events:
            return Run(False)
        if name == self.from_stage:
            self.reached = True
            return Run(True, "--from-stage")
        return self._decide(name, schema, stamp)

    def enter_each(self, name: str, branches: list[str], schema: Schema | None) -> list[Decision]:
        """A fan-out `name` entered with its branches (`name@key`), each decided as a stage of its own.

        Its branches are siblings, not steps one after another: a branch that runs makes the
        fan-out the start point, and its siblings with a succeeded record are reused all the same.
        `--from-stage name` runs every branch; `--from-stage name@key` runs that one branch.
        """
        self.entered.extend([name, *branches])
        self.entered_names.update([name, *branches])
        if name in self.skip:
            reason = f"--skip-stage {name}: a fan-out is not skipped; redo it, or skip the stages around it"
            return [Halt(reason) for _ in branches]
        if self.events and self.redo is not None and self.redo.reached:
            return [self._after_redo(branch, schema) for branch in branches]
        if self.reached and not self.events:
            return [Run(False) for _ in branches]
        if name == self.from_stage:
            self.reached = True
            return [Run(index == 0, "--from-stage") for index in range(len(branches))]
        if name in self.values:
            return self._provided_each(name, branches, schema)
        before, decisions = self.reached, list[Decision]()
        for branch in branches:
            self.reached = before  # each branch as if it were the first entered after what came before
            if branch == self.from_stage:
                decisions.append(Run(True, "--from-stage"))
            else:
                decisions.append(self._decide(branch, schema))
        self.reached = before or any(isinstance(decision, Run) for decision in decisions)
        return decisions

    def _provided_each(self, name: str, branches: list[str], schema: Schema | None) -> list[Decision]:
        """A fan-out's value given whole with --values: a list, one value a branch in the items' order."""
        given = self.values[name]
        if not isinstance(given, list) or len(given) != len(branches):
            had = f"a list of {len(given)}" if isinstance(given, list) else f"a {type(given).__name__}"
            count = len(branches)
            reason = f"stage {name} is a fan-out of {count} branches: its value is a list of {count}, not {had}"
            return [Halt(reason, redo=self.from_stage, bad_value=True) for _ in branches]
        return [self._provided(branch, schema, value) for branch, value in zip(branches, given, strict=True)]

    def _decide(self, name: str, schema: Schema | None, stamp: Stamp | None = None) -> Decision:
        """A stage before the start point: given with --values, reused, or where the start point is."""
        if name in self.values:
            return self._provided(name, schema)
        record = self.records.get(name)
        if isinstance(record, RecordError):
            return Halt(f"stage {name}'s record cannot be used: {record}", redo=name)
        if record is None or record["outcome"] != "succeeded":
            if self.events and self.from_stage is None:
                first, self.reached = not self.reached, True
                return Run(first, _why_run(record))
            if self.from_stage is not None and schema is None:
                # A stage with no result needs no value: starting after it counts it as done.
                self.reused.append(name)
                return Reuse(None, None, "provided")
            if self.from_stage is not None:
                return Halt(self._missing_before_from_stage(name, record), redo=self.from_stage, needs=True)
            self.reached = True
            crashed = self.interrupted_in.get(name) if record is None else None
            return Run(True, f"no record: attempt {crashed} was interrupted in it" if crashed else _why_run(record))
        return self._reuse(name, record, schema, stamp)

    def _skipped(self, name: str, schema: Schema | None) -> Decision:
        """A stage --skip-stage names: its work is not called; it takes the value --values gives, or
        else its recorded one, wherever it comes, before the start point or after it."""
        if name in self.values:
            return self._provided(name, schema)
        record = self.records.get(name)
        if schema is None:
            self.reused.append(name)
            return Reuse(None, record if isinstance(record, dict) else None, "skipped")
        if isinstance(record, RecordError):
            return Halt(f"--skip-stage {name}: its record cannot be used: {record}", redo=name)
        if record is None or record["outcome"] != "succeeded":
            return Halt(f"--skip-stage {name}: it has a result and no succeeded record; give its value with --values")
        plain = record.get("value")
        value, problem = schema.load(plain)
        if problem:
            file = self.record_file(name)
            return Halt(f"--skip-stage {name}: its recorded value ({file}) no longer fits its result: {problem}")
        self.reused.append(name)
        return Reuse(value, record, "skipped", plain)

    def fresh_ran(self, name: str, plain: Any) -> str | None:
        """A fresh stage's new value, compared with its record's: what to say when it changed.
        Nothing to compare (no succeeded record) or the same value leaves the stages after it as
        they were; a different one makes the stage after it the start point."""
        record = self.records.get(name)
        if self.reached or self.events or not isinstance(record, dict) or record.get("outcome") != "succeeded":
            return None  # in a run with events, records stay current: a redo is --from-stage's
        if _canonical(record.get("value")) == _canonical(plain):
            return None
        self.fresh_changed = name
        old, new = _shortened(_canonical(record.get("value")), _canonical(plain))
        return (
            f"fresh stage {name}'s value changed since attempt {record.get('attempt')} ({old} → {new}): "
            "the stages after it run again"
        )

    def _after_redo(self, name: str, schema: Schema | None, stamp: Stamp | None = None) -> Decision:
        redo = self.redo
        assert redo is not None
        record = self.records.get(name)
        if isinstance(record, RecordError):
            return Halt(f"stage {name}'s record cannot be used: {record}", redo=name)
        if record is None or record["outcome"] != "succeeded":
            return Run(False, _why_run(record))
        if name not in redo.before_stages and record["attempt"] < redo.attempt:
            return Run(False, f"its record is older than the redo from {redo.stage} in attempt {redo.attempt}")
        return self._reuse(name, record, schema, stamp)

    def _provided(self, name: str, schema: Schema | None, value: Any = None) -> Decision:
        value = self.values.get(name, value)  # a branch given alone, over the fan-out given whole
        if schema is None:
            reason = f"stage {name} has no result, so it needs no value"
            return Halt(reason, redo=self.from_stage, bad_value=True)
        handed, problem = schema.load(value)
        if problem:
            return Halt(f"stage {name}: {problem}", redo=self.from_stage, bad_value=True)
        self.reused.append(name)
        return Reuse(handed, None, "provided", value)

    def _missing_before_from_stage(self, name: str, record: StageRecord | None) -> str:
        had = "" if record is None else f" (its record {record['outcome']} in attempt {record['attempt']})"
        return (
            f"stage {name} comes before --from-stage {self.from_stage} and has no succeeded record to reuse"
            f"{had}; give its value with --values"
        )

    def _stale(self, name: str, record: StageRecord, schema: Schema | None) -> str | None:
        # The record's file is named only in a problem: a continue reuses thousands of stages.
        recorded, now = record.get("workflow_version"), self.code_version
        if not self.events and recorded and now and version_key(recorded) != version_key(now):
            return (
                f"stage {name} was recorded by version {recorded} of the workflow ({self.record_file(name)}), "
                f"and the code is version {now}; a record of another major version may not mean what the code expects"
            )
        had_result = record.get("has_result", True)
        if schema is None and had_result and record.get("value") is not None:
            return f"stage {name} no longer declares a result, but its record ({self.record_file(name)}) holds a value"
        if schema is not None and not had_result:
            return f"stage {name} now declares a result, but it was recorded without one ({self.record_file(name)})"
        return None

    def _changed(self, name: str, recorded_version: Any, recorded_key: Any, stamp: Stamp) -> Decision | None:
        """A record of another stage version or cache key than the code gives: a stop, or with
        on_change="redo" the start point. Only where both the record and the code have one: a
        version or key added to a workflow leaves its older records reused."""
        changes = []
        if recorded_version is not None and stamp.version is not None and recorded_version != stamp.version:
            changes.append(f"version {recorded_version} → {stamp.version}")
        if (
            recorded_key is not None
            and stamp.cache_key is not None
            and _canonical(recorded_key) != _canonical(stamp.cache_key)
        ):
            old, new = _shortened(_key_text(recorded_key), _key_text(stamp.cache_key))
            changes.append(f"cache key {old} → {new}")
        if not changes:
            return None
        changed = ", ".join(changes)
        if stamp.on_change == "redo" and not self.events:
            self.reached = True
            return Run(True, f'{changed}; on_change="redo"', changed=changed)
        events = (
            '; in a run with events on_change="redo" stops too: redo it with --from-stage'
            if stamp.on_change == "redo"
            else ""
        )
        return Halt(
            f"stage {name} changed since its record was made ({self.record_file(name)}): {changed}; its value may "
            f'not be what the code makes now: redo it from there, or give the stage on_change="redo"{events}',
            redo=name,
        )

    def _reuse(self, name: str, record: StageRecord, schema: Schema | None, stamp: Stamp | None = None) -> Decision:
        if stamp is not None:
            changed = self._changed(name, record.get("stage_version"), record.get("cache_key"), stamp)
            if changed is not None:
                return changed
        problem = self._stale(name, record, schema)
        if problem:
            return Halt(problem, redo=name)
        plain = record.get("value")
        value = plain
        if schema is not None:
            value, problem = schema.load(plain)
            if problem:
                file = self.record_file(name)
                return Halt(
                    f"the recorded value of stage {name} ({file}) no longer fits its result: {problem}", redo=name
                )
        self.reused.append(name)
        return Reuse(value, record, "reused", plain)

    def record_file(self, name: str) -> str:
        """Where stage `name`'s record is, as short as it reads from here."""
        if self.stages_dir is None:
            return f"stages/{name}.json"
        path = self.stages_dir / f"{name}.json"
        try:
            return os.path.relpath(path)
        except ValueError:
            return str(path)

    def never_reached(self) -> list[str]:
        """Recorded stages this attempt did not enter: where a mistyped or renamed stage hides."""
        return [name for name in self.records if name not in self.entered_names]


def _why_run(record: StageRecord | None) -> str:
    if record is None:
        return "no record"
    return f"{record['outcome']} in attempt {record['attempt']}"


def _canonical(key: Any) -> str:
    """A cache key as it is compared: canonical JSON, so a key read back from the record equals the code's."""
    return json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _key_text(key: Any) -> str:
    """A cache key as it is shown: a string as it is, any other value as canonical JSON."""
    return key if isinstance(key, str) else _canonical(key)


_KEY_SHOWN = 12


def _shortened(old: str, new: str) -> tuple[str, str]:
    """Two keys shortened alike, long enough to tell apart: a digest is read by its first characters."""
    if max(len(old), len(new)) <= _KEY_SHOWN + 4:
        return old, new
    size = _KEY_SHOWN
    while old[:size] == new[:size] and size < max(len(old), len(new)):
        size += 8

    def cut(text: str) -> str:
        return text if len(text) <= size else text[:size] + "…"

    return cut(old), cut(new)
