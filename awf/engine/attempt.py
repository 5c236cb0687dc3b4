"""One attempt of a run, from claiming it to writing its ending."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import signal
import socket
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..record import entries, file_kinds, folder
from ..record.clock import age, iso, now_iso
from ..record.errors import RecordError, RecordWriteError
from ..record.inbox import read_events
from ..record.layout import RunPaths, root_problem, run_root_for
from ..record.liveness import process_start
from ..record.names import id_problem, stage_name_problem
from . import attempt_agents, attempt_outcome, attempt_sandbox, budget
from . import from_stage as from_stage_rules
from .context import AttemptState, Context, in_stage_work, stage_of
from .durations import format_duration
from .errors import MissingPackage, Park, PlanStop, Refusal, StageValueError, Stop, WorkflowError
from .frames import user_traceback
from .loader import load_workflow
from .observer import Observer, Silent
from .placement import placed_on
from .plan import RedoMark, StagePlan
from .report import Ending as ReportEnding
from .report import StageEntered, Written, write_report
from .request import RunRequest
from .schema import json_problem
from .schema_text import type_text
from .signals import NAMES, Guard, Interruptions
from .workflow import Workflow

if TYPE_CHECKING:
    from .lookahead import LookAhead


@dataclass
class Ending:
    """How an attempt ended: what the CLI prints and what out.json holds."""

    outcome: str
    exit_code: int
    out: dict[str, Any]
    stage: str | None = None
    reason: str | None = None
    go_on: str | None = None
    record_dir: Path | None = None
    detail: str | None = None  # a traceback worth showing
    hints: list[str] = field(default_factory=list)
    error: str | None = None  # an `awf:` line for the CLI: what to install, when a package is missing
    value: Any = None  # what the workflow returned, as it returned it
    plain: Any = None  # the same as plain JSON: what out.json holds
    workflow: Workflow[Any] | None = None
    needs: dict[str, Any] | None = None  # for a start part-way: each stage's result schema
    waits: list[dict[str, Any]] | None = None  # what a parked attempt waits for
    write_error: RecordWriteError | None = None  # a file of the record that could not be written


def generated_id() -> str:
    """Local time and four hex digits: 20261004-1532-a7f3."""
    # os.urandom is what secrets.token_hex reads, without secrets' imports (hashlib, random).
    return f"{datetime.now():%Y%m%d-%H%M}-{os.urandom(2).hex()}"


@dataclass
class Preview:
    """What a continue would do (`--plan`), found by the look-ahead; nothing ran."""

    name: str
    attempt: int
    look: LookAhead
    from_stage: str | None
    go_on: str
    records: dict[str, Any]
    preset: Ending | None = None  # the stop the look-ahead already knows the attempt ends with

    @property
    def would_stop(self) -> bool:
        look = self.look
        return bool(look.halt or look.stop or look.needs or look.value_problems or (look.returned and self.from_stage))

    @property
    def exit_code(self) -> int:
        return 3 if self.would_stop else 0


def run_attempt(request: RunRequest, observer: Observer) -> Ending | Preview:
    """Claim the run, run the workflow once, write its ending. Raises Refusal or LoadError.

    With `request.preview`, only look ahead and return what the attempt would do.
    """
    if request.from_stage is not None:
        refusal = from_stage_rules.name_refusal(request.from_stage)
        if refusal:
            raise Refusal(refusal)
    workflow = request.workflow or load_workflow(request.target)
    cwd = _cwd(request)
    root = run_root_for(cwd, request.run_root)
    problem = root_problem(root, given=request.run_root is not None)
    if problem:
        raise Refusal(problem)
    values = _read_values(request.values_file) if request.values_file is not None else None
    claimed = _claim_continue(request, workflow, root, cwd) if request.resume else None
    ending: Ending | Preview | None = None
    try:
        if claimed is None:
            identity = _new_identity(request, workflow, root, cwd)
            paths, args, run_cwd, attempt, history, records = identity.paths, identity.args, cwd, 1, None, {}
        else:
            paths, args, run_cwd, attempt, history = (
                claimed.paths,
                claimed.args,
                claimed.cwd,
                claimed.attempt,
                claimed.history,
            )
            records = folder.read_stage_records(paths)
        mark = None
        if workflow.events:
            from . import attempt_events  # deferred, here and below: only a run with events needs it

            mark, from_stage = attempt_events.redo_mark(history, attempt, request.from_stage)
        else:
            from_stage = request.from_stage or _inherited_from_stage(history)
        look = None
        if from_stage or request.preview:
            look = _look_ahead(
                workflow,
                args,
                paths,
                run_cwd,
                attempt,
                records,
                from_stage,
                values or {},
                mark,
                history,
                request.preview,
            )
        if look is not None and request.from_stage and look.returned:
            refusal = from_stage_rules.unknown_refusal(request.from_stage, records, [s.name for s in look.seen])
            if refusal:
                raise Refusal(refusal)
        if look is not None and request.from_stage and look.parks_before_start and not look.needs:
            from . import attempt_events

            raise Refusal(attempt_events.park_refusal(paths, request, look))
        preset = _check_look_ahead(request, paths, look, from_stage, values, records) if look else None
        if request.preview:
            assert look is not None
            if claimed is not None:
                left = attempt_agents.left_running(paths, claimed.history)
                if left and not (request.end_leftovers or request.ignore_leftovers):
                    raise Refusal(attempt_agents.leftovers_refusal(paths, left))
            go_on = _preview_go_on(request, paths.id, look, from_stage, preset, history)
            return Preview(paths.name, attempt, look, from_stage, go_on, records, preset)
        if claimed is not None:
            _settle_leftovers(request, claimed, observer)
            _name_interrupted(claimed.history, observer, paths, request.from_stage, from_stage)
        if request.resume and request.from_stage and request.from_stage not in records and look and look.ended:
            observer.notice(
                f"--from-stage {request.from_stage}: this run has no record of that stage, and the look-ahead "
                f"cannot see whether the workflow reaches it ({look.ended}); the attempt stops if it never does"
            )
        if claimed is None:
            claimed = _create(identity, request, workflow)
        ending = _run_claimed(request, workflow, claimed, observer, records, from_stage, values or {}, preset, mark)
        return ending
    finally:
        if claimed is not None:
            if ending is None and not request.preview:
                folder.remove_pid(claimed.paths)  # refused after the claim: no attempt runs
            claimed.claim.release()
        if isinstance(ending, Ending) and claimed is not None and workflow.events:
            # An event sent while this attempt worked found it live and did not wake the run.
            from . import wakes

            wakes.after_attempt(claimed.paths)


def prepare_elsewhere(request: RunRequest) -> tuple[RunPaths, Path]:
    """Ready the run for an attempt that another process will make, maybe on another machine:
    a new run is made (its `run` line, no attempt yet), a continue is checked as it would be here.

    Returns the run's paths and the folder it works in; holds no claim once it returns. Raises
    Refusal as an attempt here would, before anything is placed.
    """
    workflow = request.workflow or load_workflow(request.target)
    cwd = _cwd(request)
    root = run_root_for(cwd, request.run_root)
    if request.values_file is not None:
        _read_values(request.values_file)  # a values file that cannot be used is refused here, not on a node
    if request.resume:
        claimed = _claim_continue(request, workflow, root, cwd)
    else:
        claimed = _create(_new_identity(request, workflow, root, cwd), request, workflow)
    claimed.claim.release()
    return claimed.paths, claimed.cwd


@dataclass
class _Claimed:
    paths: RunPaths
    claim: folder.AttemptClaim
    args: dict[str, Any]
    cwd: Path
    attempt: int
    history: folder.History | None
    sandbox: Any = None  # the run's sandbox profile, or None


@dataclass
class _Identity:
    paths: RunPaths
    args: dict[str, Any]
    run_fields: entries.RunFields
    cwd: Path
    sandbox: Any = None


# The largest --values file read unless AWF_VALUES_MAX_BYTES says otherwise: a value by hand for
# each stage before a start point is kilobytes; a mistaken path to a device or a dump is refused.
VALUES_MAX_BYTES = 64 * 1024 * 1024


def _values_cap() -> int:
    given = os.environ.get("AWF_VALUES_MAX_BYTES")
    if not given:
        return VALUES_MAX_BYTES
    try:
        cap = int(given)
    except ValueError:
        cap = -1
    if cap < 0:
        raise Refusal(f"AWF_VALUES_MAX_BYTES={given} is not a number of bytes, such as 268435456 for 256 MiB")
    return cap


def _read_values(path: Path) -> dict[str, Any]:
    """The --values file: a JSON object by stage name, from a regular file no larger than the cap."""
    cap = _values_cap()
    try:
        # O_NONBLOCK: opening a FIFO for reading would wait for a writer, forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise Refusal(f"--values {path}: no such file") from None
    except OSError as error:
        raise Refusal(f"--values {path} cannot be read: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refusal(f"--values {path} is {_file_kind(info.st_mode)}, not a file: give a JSON file")
        if info.st_size > cap:
            raise Refusal(
                f"--values {path} is {info.st_size} bytes, more than the {cap} read; "
                "set AWF_VALUES_MAX_BYTES to read a larger file"
            )
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read(cap + 1)
        if len(data) > cap:
            raise Refusal(f"--values {path} grew past {cap} bytes as it was read; set AWF_VALUES_MAX_BYTES to read it")
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise Refusal(f"--values {path} cannot be read: {error}") from None
    finally:
        os.close(fd)
    try:
        values = json.loads(text)
    except json.JSONDecodeError as error:
        raise Refusal(f"--values {path} is not JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    if not isinstance(values, dict):
        raise Refusal(
            f"--values {path} holds a {type(values).__name__}; it must be a JSON object by stage name, "
            'such as {"plan": {"doc": "docs/ABC-1.md"}}'
        )
    bad = [name for name in values if stage_name_problem(name)]
    if bad:
        raise Refusal(f"--values {path} names {', '.join(map(repr, bad))}, which cannot be stage names")
    return values


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _inherited_from_stage(history: folder.History | None) -> str | None:
    """A crash during a --from-stage redo leaves that redo to the next continue."""
    last = history.last if history else None
    if last is None or last.end is not None or last.is_live():
        return None
    from_stage = last.flags.get("from_stage")
    if not from_stage:
        return None
    if last.start_point is not None and last.open_stage != from_stage:
        return None  # it got past the stage it redid; a plain continue picks up after it
    return str(from_stage)


def _look_ahead(
    workflow: Workflow[Any],
    args: dict[str, Any],
    paths: RunPaths,
    cwd: Path,
    attempt: int,
    records: dict[str, Any],
    from_stage: str | None,
    values: dict[str, Any],
    mark: RedoMark | None,
    history: folder.History | None,
    preview: bool = False,
) -> LookAhead:
    from .lookahead import LookAhead, look_ahead  # deferred: only --from-stage and --plan look ahead

    plan = StagePlan(records, workflow.version, from_stage, dict(values), events=bool(workflow.events), redo=mark)
    state = AttemptState(
        paths=paths,
        attempt=attempt,
        plan=plan,
        observer=Silent(),
        workflow_version=workflow.version,
        schema_base=workflow.base_dir,
    )
    # A preview of a run with events looks past the start point too, for where the attempt would park.
    state.look_ahead = LookAhead(beyond_start=preview and bool(workflow.events))
    if workflow.events:
        from . import attempt_events

        attempt_events.attach(state, workflow, history)
    context = Context(state, run_id=paths.id, workflow=workflow.name, cwd=cwd)
    return look_ahead(workflow, context, args, cwd)


def _check_look_ahead(
    request: RunRequest,
    paths: RunPaths,
    look: LookAhead,
    from_stage: str | None,
    values: dict[str, Any] | None,
    records: dict[str, Any],
) -> Ending | None:
    """Refuse a --values file with problems; stop at once when values are needed and not given."""
    if values is not None:
        known = {seen.name for seen in look.seen}
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
        return Ending(
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
    ending = Ending(
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
    preset: Ending | None,
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
        repeated = _repeated_stop_stage(look.seen[-1].name, [], history)
        redo = repeated[0] if repeated else None
    return request.go_on(run_id, from_stage=redo or from_stage)


def _cwd(request: RunRequest) -> Path:
    if request.cwd is None:
        return Path.cwd()
    cwd = request.cwd.expanduser().absolute()
    if not cwd.is_dir():
        raise Refusal(f"--cwd {request.cwd} is not a folder")
    return cwd


def _prepare(workflow: Workflow[Any], argv: list[str]) -> dict[str, Any]:
    try:
        return workflow.prepare_args(argv)
    except Exception as error:
        raise Refusal(f"prepare refused the arguments {argv}: {type(error).__name__}: {error}") from None


def _id_from_args(workflow: Workflow[Any], args: dict[str, Any], argv: list[str]) -> str | None:
    """The run's id from the workflow's id(args), checked: a refusal says which function gave it."""
    given = json.dumps(argv, ensure_ascii=False)
    go_on = "give --id, or the arguments the workflow's prepare expects"
    try:
        run_id = workflow.run_id_for(args)
    except Exception as error:
        raise Refusal(f"id(args) failed for argv {given}: {type(error).__name__}: {error}; {go_on}") from None
    if run_id is None:
        return None
    if run_id == "":
        raise Refusal(f'id(args) returned "" for argv {given}; {go_on}')
    problem = id_problem(run_id, "run id")
    if problem:
        raise Refusal(f"id(args) returned {run_id!r} for argv {given}: {problem}; {go_on}")
    return run_id


def _new_identity(request: RunRequest, workflow: Workflow[Any], root: Path, cwd: Path) -> _Identity:
    argv = request.argv or []
    args = dict(request.args) if request.args is not None else _prepare(workflow, argv)
    run_id = request.run_id
    if run_id is None:
        run_id = _id_from_args(workflow, args, argv)
    if run_id is None:
        run_id = generated_id()
    problem = id_problem(run_id, "run id")
    if problem:
        raise Refusal(problem)
    paths = RunPaths(root, workflow.name, run_id)
    sandbox = attempt_sandbox.requested(request.sandbox, cwd)
    run_fields: entries.RunFields = {
        "workflow": workflow.name,
        "id": run_id,
        "argv": argv,
        "cwd": str(cwd),
        "sandbox": sandbox.as_record() if sandbox is not None else None,
        "file": str(Path(request.target).absolute()),
        "workflow_version": workflow.version,
    }
    if workflow.events:
        from . import attempt_events

        run_fields["events"] = attempt_events.declared(workflow)
    if request.args is not None:
        run_fields["args"] = dict(request.args)  # given whole by a caller in Python; prepare was not called
    if request.preview:
        return _Identity(paths, args, run_fields, cwd, sandbox)
    try:
        # Early, before any look-ahead; again, race-free, as the folder is made.
        folder.refuse_if_taken(paths, locked=False)
    except folder.Refused as refused:
        raise Refusal(str(refused)) from None
    return _Identity(paths, args, run_fields, cwd, sandbox)


def _create(identity: _Identity, request: RunRequest, workflow: Workflow[Any]) -> _Claimed:
    try:
        claim = folder.create_run(identity.paths, identity.run_fields)
    except folder.Refused as refused:
        raise Refusal(str(refused)) from None
    except RecordWriteError as error:
        if error.errno == errno.ENOTDIR:  # a file where a folder of the run root goes: a path given wrong
            raise Refusal(f"{error.path} is a file, not a folder; give a folder for the runs") from None
        raise
    return _Claimed(identity.paths, claim, identity.args, identity.cwd, 1, None, identity.sandbox)


def _claim_continue(request: RunRequest, workflow: Workflow[Any], root: Path, cwd: Path) -> _Claimed:
    run_id = request.run_id
    if run_id is None and request.argv is not None and workflow.id is not None:
        run_id = _id_from_args(workflow, _prepare(workflow, request.argv), request.argv)
    if run_id is None:
        raise Refusal("--continue needs the run's --id")
    problem = id_problem(run_id, "run id")
    if problem:
        raise Refusal(problem)
    paths = RunPaths(root, workflow.name, run_id)
    if paths.dir.exists() and not paths.dir.is_dir():
        raise Refusal(
            f"{paths.dir} is a file, where run {paths.name} keeps its folder; move it away, or give another id"
        )
    if not paths.log.exists():
        raise Refusal(_no_such_run(paths))
    try:
        claim = folder.claim_existing(paths)
    except folder.Refused as refused:
        raise Refusal(str(refused)) from None
    try:
        history = folder.read_history(paths, ended_stages=False)
        recorded_argv = history.run["argv"]
        recorded_cwd = Path(history.run["cwd"])
        if request.argv is not None and request.argv != recorded_argv:
            raise Refusal(
                f"run {paths.name} was started with the arguments {recorded_argv}, not {request.argv}: "
                "different input is a different run; drop them to continue, or start a new run"
            )
        if request.cwd is not None and cwd != recorded_cwd:
            raise Refusal(f"run {paths.name} works in {recorded_cwd}, not {cwd}: a continue keeps the run's --cwd")
        sandbox = attempt_sandbox.kept(request.sandbox, history.run.get("sandbox"), recorded_cwd, paths.name)
        try:
            args = dict(request.args) if request.args is not None else workflow.prepare_args(recorded_argv)
        except Exception as error:
            raise Refusal(
                f"prepare no longer accepts the run's recorded arguments {recorded_argv} "
                f"({type(error).__name__}: {error}); start a new run"
            ) from None
        last = history.last
        if last is not None and last.status == attempt_outcome.COMPLETED and request.from_stage is None:
            raise Refusal(_completed_text(paths, history, request))
        if not recorded_cwd.is_dir():
            raise Refusal(f"run {paths.name} works in {recorded_cwd}, which is no longer a folder")
        if "events" in history.run:
            read_events(paths)  # an inbox that cannot be read is found now, before anything is recorded
    except RecordError:
        claim.release()
        raise  # the run's record cannot be read: exit 3, naming the file
    except Refusal:
        claim.release()
        raise
    number = (last.number if last else 0) + 1
    if not request.preview:
        try:
            folder.clear_leftovers(paths)
            # At once, so a continue or a new run refused meanwhile names this attempt and its pid.
            folder.write_pid(paths, number)
        except BaseException:
            claim.release()
            raise
    return _Claimed(paths, claim, args, recorded_cwd, number, history, sandbox)


def _no_such_run(paths: RunPaths) -> str:
    text = f"there is no run {paths.name}: looked in {paths.workflow_dir}"
    try:
        others = sorted(
            name
            for name in os.listdir(paths.root)
            if name != paths.workflow and (paths.root / name / paths.id / "run.jsonl").exists()
        )
    except FileNotFoundError:
        others = []
    if others:
        text += f"; the id {paths.id} belongs to a run of {', '.join(others)}: continue it with that workflow's file"
    else:
        text += " (a continue looks under --cwd, or the current folder, or --run-root)"
    return text


def _completed_text(paths: RunPaths, history: folder.History, request: RunRequest) -> str:
    records = folder.read_stage_records(paths)
    lines = [f"run {paths.name} completed; a continue of a completed run redoes nothing, so it is refused."]
    if records:
        lines.append("Redo from one of its recorded stages with --from-stage:")
        width = max(len(name) for name in records)
        for name, record in records.items():
            if isinstance(record, RecordError):
                lines.append(f"  {name:<{width}}  its record {record.path} {record.problem}")
                continue
            lines.append(f"  {name:<{width}}  {_ran_text(record)}")
        first = next(iter(records))
        lines.append(f"  e.g. {request.go_on(paths.id, from_stage=first)}")
    return "\n".join(lines)


def _ran_text(record: dict[str, Any]) -> str:
    seconds = age(record.get("ended"))
    ago = f", {format_duration(seconds)} ago" if seconds is not None else ""
    return f"{record['outcome']} in attempt {record['attempt']}{ago}"


def _run_claimed(
    request: RunRequest,
    workflow: Workflow[Any],
    claimed: _Claimed,
    observer: Observer,
    records: dict[str, Any],
    from_stage: str | None,
    values: dict[str, Any],
    preset: Ending | None,
    mark: RedoMark | None,
) -> Ending:
    paths, history = claimed.paths, claimed.history
    if workflow.events:
        from . import attempt_events
    started = time.time()
    deadline = started + request.timeout if request.timeout else None
    try:
        max_cost = request.max_cost if request.max_cost is not None else budget.inherited(history)
        entries.append(
            paths.log,
            entries.attempt_start(
                attempt=claimed.attempt,
                pid=os.getpid(),
                process_start=process_start(os.getpid()),
                host=socket.gethostname(),
                **placed_on(),
                file=str(Path(request.target).absolute()),
                workflow_version=workflow.version,
                flags={
                    "continue": request.resume,
                    "from_stage": from_stage,
                    "values": str(request.values_file) if request.values_file else None,
                    "timeout": request.timeout_text,
                    "max_cost": request.max_cost_text,
                },
                max_cost=max_cost,
                deadline=iso(deadline) if deadline else None,
                **({"events": attempt_events.declared(workflow)} if workflow.events else {}),
            ),
        )
        if history is not None:
            attempt_agents.settle_unrecorded(paths, claimed.attempt, observer, read=history.read)
        if workflow.events and request.from_stage:
            attempt_events.record_redo(paths, claimed.attempt, request.from_stage)
    except RecordWriteError:
        folder.remove_pid(paths)  # nothing ran; the log keeps what it took
        raise
    observer.attempt_started(workflow.name, paths.id, claimed.attempt, paths.dir)
    state = AttemptState(
        paths=paths,
        attempt=claimed.attempt,
        plan=StagePlan(
            records,
            workflow.version,
            from_stage,
            dict(values),
            events=bool(workflow.events),
            redo=mark,
            interrupted_in={
                attempt.open_stage: attempt.number
                for attempt in (history.attempts if history else [])
                if attempt.end is None and attempt.open_stage and not attempt.is_live()
            },
        ),
        observer=observer,
        workflow_version=workflow.version,
        schema_base=workflow.base_dir,
    )
    state.max_cost = max_cost
    attempt_agents.attach(state, cwd=claimed.cwd, deadline=deadline, sandbox=claimed.sandbox)
    if workflow.events:
        attempt_events.attach(state, workflow, history)
    context = Context(state, run_id=paths.id, workflow=workflow.name, cwd=claimed.cwd)
    previous_cwd = Path.cwd()
    os.chdir(claimed.cwd)
    result = None
    try:
        if preset is not None:
            ending = preset
            ending.record_dir, ending.workflow = paths.dir, workflow
        else:
            result = _drive(workflow, context, state, claimed.args, deadline, request.timeout_said())
            ending = _ending(request, workflow, claimed, state, result, history, from_stage)
    finally:
        attempt_agents.end(state)
        state.progress.close()
        os.chdir(previous_cwd)
    if ending.outcome == attempt_outcome.COMPLETED and state.agents is not None:
        attempt_agents.settle_unrecorded(paths, claimed.attempt, observer, own=True)
    out = file_kinds.out_record(
        workflow=workflow.name,
        id=paths.id,
        attempt=claimed.attempt,
        outcome=ending.outcome,
        exit_code=ending.exit_code,
        stage=ending.stage,
        reason=ending.reason,
        go_on=ending.go_on,
        record=str(paths.dir),
        started=iso(started),
        ended=now_iso(),
        stages=state.stage_list,
        cost=_costs(paths, claimed.attempt),
    )
    if ending.outcome == attempt_outcome.COMPLETED:
        out["value"] = ending.plain
    if ending.needs is not None:
        out["needs"] = ending.needs
    if ending.waits is not None:
        out["waits"] = ending.waits
    try:
        if workflow.report is not None:
            written = _report(workflow, ending, state, claimed.cwd)
            out["report"] = str(written.path) if written.path else None
            if written.error:
                out["report_error"] = written.error
        elif paths.report.exists():
            folder.write_report(paths, None)  # an earlier attempt's; its text is in run.jsonl
        folder.write_out(paths, out)
    except RecordWriteError as error:
        ending.write_error = ending.write_error or error
    if ending.write_error is not None:
        # What the record could not take is the attempt's ending: failed, saying which file and why.
        ending.outcome, ending.exit_code = attempt_outcome.FAILED, attempt_outcome.exit_code(attempt_outcome.FAILED)
        ending.reason = str(ending.write_error)
        ending.go_on = ending.go_on or request.go_on(paths.id)
        out.update(
            {"outcome": ending.outcome, "exit_code": ending.exit_code, "reason": ending.reason, "go_on": ending.go_on}
        )
    ending.out = {**out}
    end_line = entries.attempt_end(
        attempt=claimed.attempt,
        outcome=ending.outcome,
        exit_code=ending.exit_code,
        stage=ending.stage,
        reason=ending.reason,
        after=state.last_stage,
        ran=state.ran,
        go_on=ending.go_on,
        **({"waits": ending.waits} if ending.waits is not None else {}),
    )
    try:
        entries.append(paths.log, end_line)
    except RecordWriteError as error:
        ending.write_error = ending.write_error or error  # the run reads interrupted
    folder.remove_pid(paths)
    if result is not None and result.interruptions is not None:
        result.interruptions.restore()  # a caller in Python gets its own handlers back
    return ending


def _report(workflow: Workflow[Any], ending: Ending, state: AttemptState, cwd: Path) -> Written:
    """The workflow's report of this ending, run in the run's folder as the workflow was."""
    entered = tuple(
        StageEntered(
            item["stage"],
            item["how"],
            item.get("outcome") or "failed",
            item.get("attempt") or state.attempt,
            state.stage_values.get(item["stage"]) if item.get("outcome") == "succeeded" else None,
        )
        for item in state.stage_list
    )
    told = ReportEnding(
        state.paths.name,
        state.attempt,
        ending.outcome,
        ending.exit_code,
        ending.stage,
        ending.reason,
        ending.go_on,
        entered,
        state.paths.dir,
    )
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        value = ending.value if ending.outcome == attempt_outcome.COMPLETED else None  # as the workflow returned it
        return write_report(workflow.report, value, told, state.paths)
    finally:
        os.chdir(previous)


def _costs(paths: RunPaths, attempt: int) -> dict[str, Any]:
    """What the attempt's agents cost, and the run's so far, as the closing block and `awf runs` say."""
    from ..record.costs import add_up, turn_costs
    from ..record.summary import cost_lines

    turns = turn_costs(cost_lines(paths.log))
    return {
        "attempt": add_up(turn for turn in turns if turn.attempt == attempt).as_json(),
        "run": add_up(turns).as_json(),
    }


def _name_interrupted(
    history: folder.History | None, observer: Observer, paths: RunPaths, given: str | None, from_stage: str | None
) -> None:
    """Each attempt since the last one that ended, which never ended and whose process is gone,
    once; for the latest, where this attempt starts instead."""
    if history is None:
        return
    trailing: list[folder.Attempt] = []
    for attempt in reversed(history.attempts):
        if attempt.end is not None or attempt.is_live():
            break
        trailing.append(attempt)
    for attempt in reversed(trailing):
        where = f" in stage {attempt.open_stage}" if attempt.open_stage else ""
        text = (
            f"attempt {attempt.number} was interrupted{where}: its process (pid {attempt.pid}) is gone, with no ending"
        )
        redoing = attempt.flags.get("from_stage")
        if redoing:
            text += f", while redoing from stage {redoing} (--from-stage {redoing})"
        if attempt is trailing[0]:
            text += "; " + _starts_instead(attempt, given, from_stage)
        observer.notice(text)
        attempt_agents.name_left_running(paths, attempt.number, observer, history)


def _settle_leftovers(request: RunRequest, claimed: _Claimed, observer: Observer) -> None:
    """Refuse to start beside an agent a crashed attempt left running, unless told to end it or not."""
    left = attempt_agents.left_running(claimed.paths, claimed.history)
    if not left or request.ignore_leftovers:
        return
    if not request.end_leftovers:
        raise Refusal(attempt_agents.leftovers_refusal(claimed.paths, left))
    stuck = attempt_agents.end_left_running(left, observer)
    if stuck:
        raise Refusal(f"--end-leftovers: {'; '.join(stuck)}; nothing was started")


def _starts_instead(crashed: folder.Attempt, given: str | None, from_stage: str | None) -> str:
    if given:
        return f"this attempt starts at --from-stage {given}"
    if from_stage:
        carried = ", without that attempt's --values" if crashed.flags.get("values") else ""
        return f"this attempt redoes from stage {from_stage} again{carried}"
    if crashed.open_stage:
        return f"this attempt starts at stage {crashed.open_stage}, the stage it was in"
    return "this attempt starts at the first stage with no succeeded record"


@dataclass
class _Result:
    value: Any = None
    error: BaseException | None = None
    signal: int | None = None
    timed_out: bool = False
    interruptions: Interruptions | None = None  # restored once the ending is written


def _drive(
    workflow: Workflow[Any],
    context: Context,
    state: AttemptState,
    args: dict[str, Any],
    deadline: float | None,
    timeout_said: str | None = None,
) -> _Result:
    result = _Result()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = loop.create_task(workflow.run(context, **args))

        def cancel(reason: str) -> None:
            guard.taken()
            if not task.done():
                task.cancel(reason)

        def ask(reason: str) -> None:
            # Said at once, from a signal handler or the guard's thread, so no stage is entered
            # after it even while the loop is blocked; the loop cancels the task when it can.
            if state.cancel_reason is None:
                state.cancel_reason = reason
            guard.asked(state.cancel_reason)
            loop.call_soon_threadsafe(cancel, state.cancel_reason)

        def on_signal(number: int) -> None:
            result.signal = number
            ask(f"cancelled by {NAMES.get(signal.Signals(number), number)}")

        def deadline_reason() -> str:
            # As the user gave it, and the time of day it came: sleep counts against a deadline.
            at = datetime.fromtimestamp(deadline or 0).strftime("%H:%M:%S")
            return f"timed out: --timeout {timeout_said} passed (at {at})"

        def on_deadline() -> None:
            if task.done() or result.signal:
                return
            result.timed_out = state.timed_out = True
            ask(deadline_reason())

        def on_deadline_after(stage: str | None) -> None:
            if result.timed_out:
                return
            result.timed_out = state.timed_out = True
            state.cancelled_in = state.cancelled_in or stage
            state.cancel_reason = state.cancel_reason or deadline_reason()

        guard = Guard(deadline, on_deadline, in_stage_work)
        interruptions = result.interruptions = Interruptions(on_signal)
        interruptions.install()
        guard.start()
        try:
            result.value = await task
        except BaseException as error:  # every way the workflow can end is an ending
            result.error = error
            # A turn whose deadline is the attempt's may see it pass first and hand the workflow
            # an answerless turn it stops or fails on: that attempt ended because time ran out.
            if deadline is not None and not result.signal and time.time() >= deadline:
                on_deadline_after(stage_of(error))
        finally:
            guard.stop()
            interruptions.ending = True

    asyncio.run(main())
    return result


def _ending(
    request: RunRequest,
    workflow: Workflow[Any],
    claimed: _Claimed,
    state: AttemptState,
    result: _Result,
    history: folder.History | None,
    from_stage: str | None,
) -> Ending:
    run_id = claimed.paths.id
    plan = state.plan

    def make(
        outcome: str,
        *,
        stage: str | None = None,
        reason: str | None = None,
        redo: str | None = None,
        detail: str | None = None,
        hints: list[str] | None = None,
        value: Any = None,
    ) -> Ending:
        code = attempt_outcome.exit_code(outcome, result.signal)
        go_on = None
        if outcome != attempt_outcome.COMPLETED:
            go_on = request.go_on(
                run_id, from_stage=redo or (from_stage if not plan.reached else None), max_cost=state.raise_budget
            )
        return Ending(
            outcome,
            code,
            {},
            stage=stage,
            reason=reason,
            go_on=go_on,
            record_dir=claimed.paths.dir,
            detail=detail,
            hints=hints or [],
            value=value,
            workflow=workflow,
        )

    error = result.error
    if result.signal:
        return make(attempt_outcome.CANCELLED, stage=_open_stage(state), reason=state.cancel_reason)
    if result.timed_out:
        return make(attempt_outcome.TIMED_OUT, stage=_open_stage(state), reason=state.cancel_reason)
    if error is None:
        if state.pending_stop is not None:
            stop = state.pending_stop
            return make(
                attempt_outcome.FAILED,
                reason=f"stop was caught: {stop.reason!r} was raised by wf.stop and then dropped; let it propagate",
            )
        if from_stage and not plan.reached:
            missed = from_stage_rules.never_reached(from_stage, plan.records, plan.entered)
            ending = make(attempt_outcome.STOPPED, reason=missed.reason, redo=missed.redo, hints=missed.hints)
            if missed.redo is None:
                ending.go_on = None
            return ending
        plain, problem = _plain(result.value)
        if problem:
            return make(attempt_outcome.FAILED, reason=f"the workflow returned a value out.json cannot hold: {problem}")
        ending = make(attempt_outcome.COMPLETED, value=result.value)
        ending.plain = plain
        return ending
    if isinstance(error, Park):
        return _parked(request, claimed, state, error, from_stage, make)
    if isinstance(error, Stop):
        redo = error.redo
        hints: list[str] = []
        if error.stage is None and not isinstance(error, PlanStop):
            repeated = _repeated_stop(state, history)
            if repeated:
                redo = redo or repeated[0]
                hints.append(repeated[1])
        where = error.stage
        return make(attempt_outcome.STOPPED, stage=where, reason=error.reason, redo=redo, hints=hints)
    if isinstance(error, RecordWriteError):
        ending = make(attempt_outcome.FAILED, stage=stage_of(error), reason=str(error))
        ending.write_error = error
        return ending
    if isinstance(error, asyncio.CancelledError):
        return make(attempt_outcome.FAILED, stage=stage_of(error), reason="the workflow was cancelled from within")
    stage = stage_of(error)
    if isinstance(error, RecordError):  # awf's own read of the record, not the workflow's code
        return make(attempt_outcome.FAILED, stage=stage, reason=f"the run's record cannot be read: {error}")
    if isinstance(error, (WorkflowError, StageValueError)):
        ending = make(attempt_outcome.FAILED, stage=stage, reason=str(error))
        ending.error = error.install if isinstance(error, MissingPackage) else None
        return ending
    # The person is shown their own frames; the stage's record keeps the whole traceback.
    detail = user_traceback(error)
    return make(attempt_outcome.FAILED, stage=stage, reason=f"{type(error).__name__}: {error}", detail=detail)


def _plain(value: Any) -> tuple[Any, str | None]:
    """The workflow's value as plain JSON: instances of Python types (models, dataclasses) as their JSON form."""
    problem = json_problem(value)
    if problem is None or "pydantic" not in sys.modules:
        return value, problem
    from .typed import plain_json

    try:
        plain = plain_json(value)
    except Exception:  # pydantic cannot write it either: say what JSON cannot hold
        return value, problem
    return plain, json_problem(plain)


def _parked(
    request: RunRequest,
    claimed: _Claimed,
    state: AttemptState,
    park: Park,
    from_stage: str | None,
    make: Callable[..., Ending],
) -> Ending:
    redoing = bool(from_stage and not state.plan.reached)
    if redoing:
        # The seeds' rule: a redo stops rather than park on its way. Its waits are kept, so the run
        # stays wakeable, and the wake goes on with the redo.
        reason = (
            f"the attempt would park before it reaches --from-stage {from_stage} "
            f"({park.text}); a redo stops rather than park on its way"
        )
        ending = make(attempt_outcome.STOPPED, reason=reason, redo=from_stage)
    else:
        ending = make(attempt_outcome.PARKED, stage=state.current_stage, reason=park.text)
    ending.waits = park.waits
    names = sorted({name for wait in park.waits for name in wait.get("names") or []})
    name = claimed.paths.name
    ending.go_on = f"awf send {name} {names[0]} --data JSON" if names else f"awf wake --run-root {claimed.paths.root}"
    ending.hints = [f"wakes on: awf send {name} {n} --data JSON" for n in names]
    if any(wait.get("due") for wait in park.waits):
        ending.hints.append("wakes after the due time with: awf wake (for cron) or a running awf serve")
    if redoing:
        ending.hints.append(f"the attempt that wakes goes on with the redo from {from_stage}")
    return ending


def _open_stage(state: AttemptState) -> str | None:
    return state.cancelled_in


def _repeated_stop(state: AttemptState, history: folder.History | None) -> tuple[str, str] | None:
    return _repeated_stop_stage(state.last_stage, state.ran, history)


def _repeated_stop_stage(
    last_stage: str | None, ran: list[str], history: folder.History | None
) -> tuple[str, str] | None:
    """A continue that ran no stage and stopped between stages where the last attempt did."""
    if ran or history is None or history.last is None or history.last.end is None:
        return None
    last = history.last.end
    if last["outcome"] != attempt_outcome.STOPPED or last.get("stage") is not None:
        return None
    if last.get("after") != last_stage or last_stage is None:
        return None
    stage = last_stage
    return stage, (
        f"attempt {history.last.number} stopped at this same check, and this attempt ran no stage: the check "
        f"sees the value stage {stage} recorded, reused as it was. To redo {stage}, go on with --from-stage {stage}"
    )
