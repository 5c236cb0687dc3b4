"""Reading runs from Python: what `awf runs` and `awf logs` show, as typed values.

    import awf.runs

    for run in awf.runs.list(status="parked"):
        print(run.name, run.waiting)
    run = awf.runs.get("fix_issue/123")
    plan = run.stage("plan").value
    for line in run.logs(after=cursor):
        ...

Nothing here writes: every value is read off the run's files when asked for, by the same readers
the commands use, so it is what `awf runs --json` says at that moment. A run folder is found under
`.awf/runs` of `cwd` (the current folder by default) or in `root`, as `--cwd` and `--run-root` do.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from .record.entries import Entry
from .record.errors import RecordError
from .record.file_kinds import RetryFields, WaitFields
from .record.layout import RunPaths
from .record.names import id_problem
from .record.roots import run_root_for

__all__ = [
    "Attempt",
    "LogLine",
    "NoSuchRun",
    "NoSuchStage",
    "RecordError",
    "Retry",
    "Run",
    "RunInfo",
    "Stage",
    "Status",
    "Wait",
    "Worktree",
    "get",
    "list",
]

Status = Literal[
    "queued", "running", "completed", "parked", "stopped", "failed", "timed-out", "cancelled", "interrupted"
]
StageOutcome = Literal["succeeded", "failed", "stopped"]


class NoSuchRun(LookupError):
    """There is no run of that name under the run root."""


class NoSuchStage(LookupError):
    """The run holds no current record of that stage."""


@dataclass(frozen=True)
class Wait:
    """What a parked run waits for: events by name, or a time (`due`, ISO 8601)."""

    wait: str
    names: tuple[str, ...]
    due: str | None


@dataclass(frozen=True)
class Retry:
    """When a run that stopped worth retrying (`wf.stop(..., retry_after=)`) is continued by awf
    serve or awf wake: `at` (ISO 8601), the `number`th retry in a row `of` the most allowed,
    `after` seconds from the attempt's end."""

    at: str
    number: int
    of: int
    after: float


@dataclass(frozen=True)
class Worktree:
    """The git worktree of a run started with --worktree."""

    path: Path
    branch: str
    base: str
    base_ref: str | None
    exists: bool
    changes: bool | None  # holds changes nobody committed; None when it is gone or git could not tell


@dataclass(frozen=True)
class RunInfo:
    """A run as a listing shows it."""

    workflow: str
    id: str
    status: Status
    in_stage: str | None  # the stage it is in, or ended in
    attempts: int
    started: str | None
    cost: float | None  # US dollars, the turns whose cost is known
    cost_unknown: int
    branch: str | None
    waiting: tuple[Wait, ...] | None
    retry: Retry | None  # a stopped run: when its retry is due, until awf cancel withdraws it
    record: Path

    @property
    def name(self) -> str:
        return f"{self.workflow}/{self.id}"


@dataclass(frozen=True)
class Attempt:
    number: int
    status: Status
    exit_code: int | None  # None while it runs, or when it was interrupted
    stage: str | None
    reason: str | None
    flags: dict[str, Any]
    started: str | None
    ended: str | None
    cost: float | None
    host: str | None


@dataclass(frozen=True)
class Stage:
    """A stage's current record: what a continue reuses when it succeeded."""

    name: str
    outcome: StageOutcome
    value: Any
    attempt: int
    origin: Literal["ran", "provided", "skipped"]
    summary: str | None
    reason: str | None
    ended: str | None
    edited: bool  # its file was edited by hand since its line was written
    stale: str | None  # after a redo: why it will run again


@dataclass(frozen=True)
class LogLine:
    """A line of run.jsonl: its cursor (give it to `logs(after=...)` or `awf logs --after`) and
    the line as written."""

    cursor: int
    kind: str
    entry: Entry  # narrowed by its kind: `if line.entry["kind"] == "turn": line.entry["outcome"]`


@dataclass(frozen=True)
class Run:
    """One run in full."""

    workflow: str
    id: str
    status: Status
    in_stage: str | None  # the stage it is in, or ended in
    argv: tuple[str, ...]
    cwd: str | None
    attempts: tuple[Attempt, ...]
    stages: dict[str, Stage]  # in the order the run recorded them
    cost: float | None
    cost_unknown: int
    go_on: str | None  # the command that goes on, when there is one
    waiting: tuple[Wait, ...] | None
    retry: Retry | None  # a stopped run: when its retry is due, until awf cancel withdraws it
    worktree: Worktree | None
    problems: tuple[str, ...]  # files (or lines) that could not be read; the rest is read without them
    record: Path

    @property
    def name(self) -> str:
        return f"{self.workflow}/{self.id}"

    def stage(self, name: str) -> Stage:
        """The current record of stage `name`."""
        try:
            return self.stages[name]
        except KeyError:
            recorded = ", ".join(self.stages) or "none"
            raise NoSuchStage(f"run {self.name} has no record of stage {name!r}; it has: {recorded}") from None

    def logs(self, after: int | None = None) -> Iterator[LogLine]:
        """The lines of its run.jsonl, from the first or from the one after cursor `after`,
        read as they are asked for."""
        from .record.log import read_lines

        log = self.record / "run.jsonl"
        for line in read_lines(log, start=0 if after is None else after):
            if after is not None and line.offset <= after:
                continue
            yield LogLine(line.offset, line.kind, line.entry)


def list(
    cwd: Path | str | None = None,
    *,
    root: Path | str | None = None,
    workflow: str | None = None,
    status: Status | builtins.list[Status] | None = None,
) -> builtins.list[RunInfo]:
    """The runs under the run root, newest first; of one workflow, or in the given statuses.
    A run whose log cannot be read is left out (`awf runs` names it)."""
    from .record.summary import STATUSES, run_folders
    from .record.summary_cache import SummaryCache

    wanted = {status} if isinstance(status, str) else set(status or [])
    unknown = sorted(wanted - set(STATUSES))
    if unknown:
        raise ValueError(f"status {', '.join(unknown)}: a run's status is one of {', '.join(STATUSES)}")
    found = []
    run_root = _root(cwd, root)
    kept = SummaryCache(run_root)
    for paths in run_folders(run_root, workflow):
        try:
            summary = kept.summary(paths)
        except RecordError:
            continue
        if summary is None or (wanted and summary.status not in wanted):
            continue
        found.append(
            RunInfo(
                workflow=summary.workflow,
                id=summary.id,
                status=cast(Status, summary.status),
                in_stage=summary.stage,
                attempts=summary.attempts,
                started=summary.started,
                cost=summary.cost,
                cost_unknown=summary.cost_unknown,
                branch=summary.branch,
                waiting=_waits(summary.waiting),
                retry=_retry(summary.retry),
                record=summary.dir,
            )
        )
    kept.save(whole=workflow is None)
    # Newest first; runs made in one millisecond by name, never in the order the folder lists them.
    found.sort(key=lambda run: (run.workflow, run.id))
    found.sort(key=lambda run: run.started or "", reverse=True)
    return found


def get(name: str, cwd: Path | str | None = None, *, root: Path | str | None = None) -> Run:
    """The run `name` ("WORKFLOW/ID") in full. Raises NoSuchRun, or RecordError for a run whose
    log cannot be read at all (a stage file that cannot be read is named in `problems`)."""
    from .record.detail import read_detail

    workflow, _, run_id = name.partition("/")
    if not (workflow and run_id):
        problem: str | None = f"{name!r} is not a run's name: name it as WORKFLOW/ID"
    else:
        problem = id_problem(workflow, "workflow") or id_problem(run_id)
    if problem:
        raise NoSuchRun(problem)
    paths = RunPaths(_root(cwd, root), workflow, run_id)
    if not paths.log.is_file():
        raise NoSuchRun(f"there is no run {name}: looked in {paths.workflow_dir}")
    detail = read_detail(paths)
    shown = detail.as_json()
    stages = {}
    for name_of, record in detail.stages.items():
        if isinstance(record, RecordError):
            continue
        item = detail.stage_json(name_of)
        stages[name_of] = Stage(
            name=name_of,
            outcome=record["outcome"],
            value=record.get("value"),
            attempt=record["attempt"],
            origin=record.get("origin", "ran"),
            summary=item.get("summary"),
            reason=record.get("reason"),
            ended=record.get("ended"),
            edited=bool(item.get("edited")),
            stale=item.get("stale"),
        )
    tree = shown["worktree"]
    return Run(
        workflow=paths.workflow,
        id=paths.id,
        status=cast(Status, shown["status"]),
        in_stage=shown["stage"],
        argv=tuple(shown["argv"] or ()),
        cwd=shown["cwd"],
        attempts=tuple(
            Attempt(
                number=item["attempt"],
                status=item["status"],
                exit_code=item["exit_code"],
                stage=item["stage"],
                reason=item["reason"],
                flags=item["flags"],
                started=item["started"],
                ended=item["ended"],
                cost=item["cost"],
                host=item.get("host"),
            )
            for item in shown["attempts"]
        ),
        stages=stages,
        cost=shown["cost"],
        cost_unknown=shown["cost_unknown"],
        go_on=shown["go_on"],
        waiting=_waits(shown["waiting"]),
        retry=_retry(shown["retry"]),
        worktree=None
        if tree is None
        else Worktree(Path(tree["path"]), **{k: v for k, v in tree.items() if k != "path"}),
        problems=tuple(f"{problem['file']}: {problem['problem']}" for problem in shown["problems"]),
        record=paths.dir,
    )


def _retry(retry: RetryFields | None) -> Retry | None:
    if retry is None:
        return None
    return Retry(at=retry["at"], number=retry["number"], of=retry["of"], after=float(retry["after"]))


def _root(cwd: Path | str | None, root: Path | str | None) -> Path:
    here = Path.cwd() if cwd is None else Path(cwd).expanduser()
    return run_root_for(here, None if root is None else Path(root).expanduser())


def _waits(waits: builtins.list[WaitFields] | None) -> tuple[Wait, ...] | None:
    if waits is None:
        return None
    return tuple(Wait(wait["wait"], tuple(wait.get("names") or ()), wait.get("due")) for wait in waits)
