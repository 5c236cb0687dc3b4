"""Where an attempt starts: the start point (--from-stage, or a redo a crash left unfinished), the
look-ahead that finds what comes before it, the --values checked against it, and the `--plan`
preview of all of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..record import folder
from ..record.file_kinds import StageRecords
from ..record.layout import RunPaths
from . import attempt_agents, attempt_outcome
from . import from_stage as from_stage_rules
from .claim import Claimed, Run
from .context import AttemptState, Context
from .ending import AttemptEnd, repeated_stop_stage
from .errors import Refusal
from .observer import Silent
from .plan import RedoMark, StagePlan
from .request import RunRequest
from .schema_text import type_text
from .workflow import Workflow

if TYPE_CHECKING:
    from .check import Spelled
    from .lookahead import LookAhead


@dataclass
class Start:
    """Where the attempt starts, and with what."""

    records: StageRecords  # the run's stage records
    from_stage: str | None  # the start point: --from-stage, or a redo an interrupted attempt left
    values: dict[str, Any] | None  # --values, as read; None when not given
    mark: RedoMark | None = None  # a redo that a run with events keeps across its attempts
    look: LookAhead | None = None  # what the look-ahead found, when it ran
    preset: AttemptEnd | None = None  # the stop the look-ahead already knows the attempt ends with
    skip: frozenset[str] = frozenset()  # --skip-stage


@dataclass
class Preview:
    """What a continue would do (`--plan`), found by the look-ahead; nothing ran."""

    name: str
    attempt: int
    look: LookAhead
    from_stage: str | None
    go_on: str
    records: StageRecords
    preset: AttemptEnd | None = None  # the stop the look-ahead already knows the attempt ends with
    to_stage: str | None = None  # --to-stage: the stage the attempt ends after

    @property
    def would_stop(self) -> bool:
        look = self.look
        return bool(look.halt or look.stop or look.needs or look.value_problems or (look.returned and self.from_stage))

    @property
    def exit_code(self) -> int:
        return 3 if self.would_stop else 0


def find_start(
    request: RunRequest, workflow: Workflow[Any], run: Run, records: StageRecords, values: dict[str, Any] | None
) -> Start:
    """Where the attempt starts; looked ahead to when it starts part-way or only previews. Raises
    Refusal for a --from-stage the workflow does not reach, or a --values file that cannot be used."""
    if workflow.events:
        from .events import attempt as attempt_events  # deferred, here and below: only a run with events needs it

        mark, from_stage = attempt_events.redo_mark(run.history, run.attempt, request.from_stage)
    else:
        mark, from_stage = None, request.from_stage or _inherited_from_stage(run.history, records)
    start = Start(records, from_stage, values, mark, skip=frozenset(request.skip_stages))
    if request.to_stage:
        refuse_unknown("--to-stage", request.to_stage, workflow, _spelled(workflow), records)
    if request.skip_stages:
        refuse_skips(request, workflow, records, values)
    if values is not None and not from_stage:
        # Without a start part-way, --values gives only the stages --skip-stage names.
        other = [name for name in values if name not in request.skip_stages]
        if other:
            raise Refusal(
                f"--values {request.values_file} gives {', '.join(other)}, which --skip-stage does not name: "
                "without --from-stage, --values gives only the stages skipped"
            )
    # A --to-stage on a continue is looked ahead to as well: the records may show it is no stage.
    if from_stage or request.preview or (request.to_stage and records):
        start.look = look = _look_ahead(workflow, run, start, request.preview)
        _refuse_start(request, run.paths, records, look)
        start.preset = _check_look_ahead(request, run.paths, look, start)
    return start


def _refuse_start(request: RunRequest, paths: RunPaths, records: StageRecords, look: LookAhead) -> None:
    """Refuse a --from-stage the workflow returns without reaching, or one it would park before."""
    if request.from_stage and look.returned:
        refusal = from_stage_rules.unknown_refusal(request.from_stage, records, [s.name for s in look.seen])
        if refusal:
            raise Refusal(refusal)
    if request.to_stage:
        _refuse_to_stage(request.to_stage, records, look, request.from_stage)
    if request.from_stage and look.parks_before_start and not look.needs:
        from .events import attempt as attempt_events

        raise Refusal(attempt_events.park_refusal(paths, request, look))


def _spelled(workflow: Workflow[Any]) -> Spelled | None:
    """The stage names the workflow's file spells out, or None where it cannot say them all."""
    if workflow.source_file is None:
        return None
    from .check import stage_names_in  # deferred: only --to-stage and --skip-stage read the source

    try:
        return stage_names_in(workflow.source_file.read_bytes())
    except OSError:
        return None


def refuse_unknown(
    flag: str, name: str, workflow: Workflow[Any], spelled: Spelled | None, records: Mapping[str, object]
) -> None:
    """Refuse a stage named with `flag` (--to-stage, --skip-stage) that the workflow's file names
    nowhere, when its source spells out every stage name: a typo would otherwise run what it was
    meant to hold back."""
    if name in records or spelled is None or spelled.names_it(name):
        return
    refusal = from_stage_rules.unknown_refusal(name, records, sorted(spelled.names), flag)
    if refusal:
        assert workflow.source_file is not None
        raise Refusal(refusal.replace("the workflow enters:", f"{workflow.source_file.name} names:"))


def refuse_skips(
    request: RunRequest, workflow: Workflow[Any], records: Mapping[str, object], values: Mapping[str, object] | None
) -> None:
    """Refuse a --skip-stage that cannot be done: a name that is no stage, the --from-stage itself,
    or a stage with a result and no value to take (none given with --values, no succeeded record)."""
    spelled = _spelled(workflow)
    for name in request.skip_stages:
        refuse_unknown("--skip-stage", name, workflow, spelled, records)
        if spelled is not None and name in spelled.fan_outs:
            raise Refusal(f"--skip-stage {name}: a fan-out is not skipped; redo it, or skip the stages around it")
        if name == request.from_stage:
            raise Refusal(f"--skip-stage {name} is the --from-stage: a redo from a stage runs it; skip another")
        if values is not None and name in values:
            continue
        record = records.get(name)
        if isinstance(record, dict) and record.get("outcome") == "succeeded":
            continue
        if isinstance(record, dict) and record.get("has_result") is False:
            continue
        if spelled is not None and name in spelled.without_result:
            continue
        had = (
            f" (its record {record.get('outcome')} in attempt {record.get('attempt')})"
            if isinstance(record, dict)
            else ""
        )
        raise Refusal(
            f"--skip-stage {name}: it has a result and no value to take: no succeeded record{had}, and no --values;"
            f" give its value in a JSON file by stage name with --values FILE"
        )


def _refuse_to_stage(to_stage: str, records: Mapping[str, object], look: LookAhead, from_stage: str | None) -> None:
    """Refuse a --to-stage the workflow returns without entering, or one it passes before its
    --from-stage: either attempt would run nothing it was asked to."""
    seen = [s.name for s in look.seen]
    if look.returned:
        refusal = from_stage_rules.unknown_refusal(to_stage, records, seen, "--to-stage")
        if refusal:
            raise Refusal(refusal)
    if from_stage and to_stage != from_stage and to_stage in seen:
        raise Refusal(
            f"--to-stage {to_stage} comes before --from-stage {from_stage}, so the attempt would end before it "
            f"redoes anything: give a --to-stage at or after {from_stage}"
        )


def preview(request: RunRequest, run: Run, claimed: Claimed | None, start: Start) -> Preview:
    """What the attempt would do (`--plan`): refused as the attempt would be, beside agents a crash
    left running."""
    assert start.look is not None
    if claimed is not None:
        left = attempt_agents.left_running(run.paths, run.history)
        if left and not (request.end_leftovers or request.ignore_leftovers):
            raise Refusal(attempt_agents.leftovers_refusal(run.paths, left))
    go_on = _preview_go_on(request, run.paths.id, start.look, start.from_stage, start.preset, run.history)
    return Preview(
        run.paths.name, run.attempt, start.look, start.from_stage, go_on, start.records, start.preset, request.to_stage
    )


def _inherited_from_stage(history: folder.History | None, records: StageRecords) -> str | None:
    """A crash during a --from-stage redo leaves that redo to the next continue: unless the
    stage it redid recorded its success before the crash (its record renamed into place, its
    line not yet appended), as a continue reuses any such record."""
    last = history.last if history else None
    if last is None or last.end is not None or last.is_live():
        return None
    from_stage = last.flags.get("from_stage")
    if not from_stage:
        return None
    if last.start_point is not None and last.open_stage != from_stage:
        return None  # it got past the stage it redid; a plain continue picks up after it
    record = records.get(from_stage)
    if isinstance(record, dict) and record["attempt"] == last.number and record["outcome"] == "succeeded":
        return None  # the redo ended its stage; a plain continue reuses it and goes on after it
    return str(from_stage)


def look_ahead_to(workflow: Workflow[Any], run: Run, records: StageRecords, stage: str) -> LookAhead:
    """The look-ahead of a continue from `stage`: how far the workflow's code gets, and the
    result schema `stage` declares there (`start_schema`) when it reaches it."""
    return _look_ahead(workflow, run, Start(records, stage, None), preview=False)


def _look_ahead(workflow: Workflow[Any], run: Run, start: Start, preview: bool) -> LookAhead:
    """Run the workflow with every stage before the start point reused or stood in for, no work done."""
    from .lookahead import LookAhead, look_ahead  # deferred: only --from-stage and --plan look ahead

    plan = StagePlan(
        start.records,
        workflow.version,
        start.from_stage,
        dict(start.values or {}),
        events=bool(workflow.events),
        redo=start.mark,
        skip=start.skip,
    )
    state = AttemptState(
        paths=run.paths,
        attempt=run.attempt,
        plan=plan,
        observer=Silent(),
        workflow_version=workflow.version,
        schema_base=workflow.base_dir,
    )
    # A preview of a run with events looks past the start point too, for where the attempt would park.
    state.look_ahead = LookAhead(beyond_start=preview and bool(workflow.events))
    if workflow.events:
        from .events import attempt as attempt_events

        attempt_events.attach(state, workflow, run.history)
    context = Context(state, run_id=run.paths.id, workflow=workflow.name, cwd=run.cwd)
    # A new run's worktree is made as its attempt starts: until then its code looks ahead where it was started.
    where = run.worktree.repository if run.worktree is not None and not run.cwd.is_dir() else run.cwd
    return look_ahead(workflow, context, run.args, where)


def _check_look_ahead(request: RunRequest, paths: RunPaths, look: LookAhead, start: Start) -> AttemptEnd | None:
    """Refuse a --values file with problems; stop at once when values are needed and not given."""
    from_stage, values, records = start.from_stage, start.values, start.records
    if values is not None:
        known = {seen.name for seen in look.seen} | look.fan_outs | set(request.skip_stages)
        problems = list(look.value_problems)
        for name in values:
            if name not in known:
                before = ", ".join(seen.name for seen in look.seen) or "none"
                problems.append(
                    f"stage {name} is not a stage before --from-stage {from_stage} (the stages before it: {before})"
                )
        missing = [seen for seen in look.needs if seen.name not in values]
        for seen in missing:
            problems.append(f"stage {seen.name} has no value: give {seen.name}: {type_text(seen.json_schema)}")
        if problems:
            listed = "\n".join(f"  {problem}" for problem in problems)
            raise Refusal(f"--values {request.values_file} cannot be used; nothing was recorded:\n{listed}")
        return None
    if look.returned and from_stage and look.needs:
        # A renamed stage hides here: say what was never reached rather than ask for values.
        missed = from_stage_rules.never_reached(from_stage, records, [seen.name for seen in look.seen])
        return AttemptEnd(
            attempt_outcome.STOPPED,
            attempt_outcome.exit_code(attempt_outcome.STOPPED),
            {},
            reason=missed.reason,
            go_on=request.go_on(paths.id, from_stage=missed.redo) if missed.redo else None,
            hints=missed.hints,
        )
    if not look.needs:
        return None
    needs = look.needs
    lines = [f"to start at {from_stage}, give a value for each stage before it, in a JSON file by stage name:"]
    lines += [f"  {seen.name}: {type_text(seen.json_schema)}" for seen in needs]
    if look.ended or look.stop:
        lines.append(f"  (the look-ahead could not see past: {look.ended or 'a stop: ' + str(look.stop)})")
    ending = AttemptEnd(
        attempt_outcome.STOPPED,
        attempt_outcome.exit_code(attempt_outcome.STOPPED),
        {},
        stage=from_stage,
        reason="\n".join(lines),
        go_on=request.go_on(paths.id, from_stage=from_stage, values="values.json"),
    )
    ending.needs = {seen.name: seen.json_schema for seen in needs}
    return ending


def _preview_go_on(
    request: RunRequest,
    run_id: str,
    look: LookAhead,
    from_stage: str | None,
    preset: AttemptEnd | None,
    history: folder.History | None,
) -> str:
    """The command the attempt `--plan` previews would print, decided as that attempt decides it."""
    if preset is not None:
        return preset.go_on or ""
    if not request.resume:
        return ""
    redo = None
    if look.halt:
        redo = look.halt[1].redo
    elif look.stop is not None and look.seen:
        repeated = repeated_stop_stage(look.seen[-1].name, [], history)
        redo = repeated[0] if repeated else None
    return request.go_on(run_id, from_stage=redo or from_stage)
