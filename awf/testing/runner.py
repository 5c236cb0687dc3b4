"""Running a workflow in a test: the real engine, a real run folder in a temporary directory,
and every agent scripted."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..agents.registry import routed_to
from ..engine.attempt import run_attempt
from ..engine.claim import generated_id
from ..engine.ending import AttemptEnd
from ..engine.errors import Refusal
from ..engine.request import RunRequest
from ..engine.workflow import Workflow
from ..record import entries
from ..record.entries import Args
from ..record.errors import RecordError
from ..record.files import write_json
from ..record.layout import RunPaths
from ..record.names import id_problem
from ..record.roots import run_root_for
from . import scratch as scratch_folders
from .earlier import as_json, earlier_records, write_earlier
from .harness import ScriptedHarness, Watch, watch_stalls
from .result import Run, read_run
from .scripts import Failure, ScriptBook

V = TypeVar("V")
STALL = 10.0  # seconds with nothing started or ended before a test's run counts as stalled


def run_workflow(  # noqa: PLR0913 — the author API: each keyword is an option of the test run
    workflow: Workflow[V],
    *,
    args: Mapping[str, Any] | None = None,
    earlier: Any = None,
    from_stage: str | None = None,
    values: Mapping[str, Any] | None = None,
    agents: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    cwd: str | Path | None = None,
    run_root: str | Path | None = None,
    stall: float = STALL,
) -> Run[V]:
    """Run `workflow` once, as one attempt of a new run, with its agents scripted.

    `args` are the run's args (prepare is not called). `earlier` (`{"stages": {NAME: VALUE}}`, or
    `recorded(PATH)`) makes the attempt a continue over those stage records. `from_stage` and
    `values` are `--from-stage` and `--values`. `agents` maps agent keys or globs to scripts.
    The run works in `cwd` (a new temporary folder by default; for a workflow with `worktree=True`,
    a new git repository with one empty commit, and the run in a worktree of it) and is kept
    under `run_root` (a new temporary folder by default). Raises Failure when the test is wrong,
    the run stalls for `stall` seconds, or `awf run` would refuse the run (a `from_stage` never
    reached, bad values).
    """
    book = ScriptBook(agents)
    run = _attempt(
        workflow,
        book,
        args=args,
        earlier=earlier,
        from_stage=from_stage,
        values=values,
        timeout=timeout,
        cwd=cwd,
        run_root=run_root,
        stall=stall,
    )
    _check_used_up(book, [run])
    return run


def run_twice(  # noqa: PLR0913 — the author API: each keyword is an option of the test run
    workflow: Workflow[V],
    *,
    args: Mapping[str, Any] | None = None,
    earlier: Any = None,
    from_stage: str | None = None,
    values: Mapping[str, Any] | None = None,
    agents: Mapping[str, Any] | None = None,
    redo: str | None = None,
    timeout: float | None = None,
    cwd: str | Path | None = None,
    run_root: str | Path | None = None,
    stall: float = STALL,
) -> tuple[Run[V], Run[V]]:
    """Run `workflow`, then continue the run over the first attempt's real records.

    The second attempt is a plain continue when the first did not complete; when it did, the
    second redoes from stage `redo`, by default the last stage the first ran, so every stage
    before it is reused. Code that only works on the first attempt (a variable assigned inside a
    stage, a check between stages) fails the second. The scripts serve both attempts: a list
    goes on where the first attempt left it.
    """
    book = ScriptBook(agents)
    first = _attempt(
        workflow,
        book,
        args=args,
        earlier=earlier,
        from_stage=from_stage,
        values=values,
        timeout=timeout,
        cwd=cwd,
        run_root=run_root,
        stall=stall,
    )
    if first.ending.outcome == "completed" and redo is None:
        ran = [stage.name for stage in first.stages if stage.how == "ran"]
        if not ran:
            raise Failure(
                f"attempt {first.attempt} completed and ran no stage, so a continue has nothing to redo; "
                "run_twice needs a workflow with a stage"
            )
        redo = ran[-1]
    run_dir = first.record_dir
    second = _attempt(
        workflow,
        book,
        args=args,
        earlier=None,
        from_stage=redo,
        values=None,
        timeout=timeout,
        cwd=_run_cwd(run_dir),
        run_root=run_dir.parent.parent,
        stall=stall,
        resume=run_dir.name,
    )
    _check_used_up(book, [first, second])
    return first, second


async def run_workflow_async(workflow: Workflow[V], **options: Any) -> Run[V]:
    """`run_workflow` for an async test: the attempt runs on a worker thread, with its own loop."""
    return await asyncio.to_thread(lambda: run_workflow(workflow, **options))


async def run_twice_async(workflow: Workflow[V], **options: Any) -> tuple[Run[V], Run[V]]:
    """`run_twice` for an async test: the attempts run on a worker thread, with their own loop."""
    return await asyncio.to_thread(lambda: run_twice(workflow, **options))


def _run_cwd(run_dir: Path) -> Path:
    from ..record.log import read_lines

    for line in read_lines(run_dir / "run.jsonl"):
        if line.entry["kind"] == "run":
            return Path(line.entry["cwd"])
    raise Failure(f"{run_dir}/run.jsonl has no run line")


def _attempt(  # noqa: PLR0913 — the options of run_workflow and run_twice, passed on
    workflow: Workflow[Any],
    book: ScriptBook,
    *,
    args: Mapping[str, Any] | None,
    earlier: Any,
    from_stage: str | None,
    values: Mapping[str, Any] | None,
    timeout: float | None,
    cwd: str | Path | None,
    run_root: str | Path | None,
    stall: float,
    resume: str | None = None,
) -> Run[Any]:
    if not isinstance(workflow, Workflow):
        raise TypeError(f"run_workflow runs a workflow made with @awf.workflow(...), not {workflow!r}")
    if values is not None and from_stage is None:
        raise TypeError("values= goes with from_stage=, as --values goes with --from-stage")
    args = dict(args or {})
    need_scratch = cwd is None or run_root is None or values is not None
    scratch = scratch_folders.make(workflow.name) if need_scratch else Path()
    work = Path(cwd).expanduser().absolute() if cwd is not None else scratch / "work"
    work.mkdir(parents=True, exist_ok=True)
    if workflow.worktree and cwd is None:
        scratch_folders.make_repository(work)  # each run's worktree is made from its one commit
    root = run_root_for(work, Path(run_root) if run_root is not None else scratch / "runs")
    watch = Watch(stall)
    wrapped = _watched(workflow, watch)
    target = _target(workflow)
    run_id = resume
    own: set[str] = set()
    if earlier is not None:
        records, own = earlier_records(earlier, workflow)
        run_id = _new_id(workflow, args)
        run_fields: entries.RunFields = {
            "workflow": workflow.name,
            "id": run_id,
            "argv": [],
            "cwd": str(work),
            "sandbox": None,
            "file": str(Path(target).absolute()),
            "workflow_version": workflow.version,
            "args": args,
        }
        try:
            write_earlier(RunPaths(root, workflow.name, run_id), run_fields, records)
        except RecordError as error:
            raise Failure(f"earlier: {error}") from None
    values_file = None
    if values is not None:
        values_file = scratch / "values.json"
        plain = {name: as_json(value, f"values: stage {name}'s value") for name, value in values.items()}
        write_json(values_file, plain)
    request = RunRequest(
        target=target,
        run_id=run_id,
        resume=run_id is not None,
        timeout=timeout,
        timeout_text=None if timeout is None else f"{timeout:g}s",
        cwd=work,
        run_root=root,
        from_stage=from_stage,
        values_file=values_file,
        workflow=wrapped,
        args=args,
    )
    try:
        ending = _run(request, book, watch)
    except Refusal as refusal:
        raise Failure(f"awf run would refuse this run: {refusal}") from None
    if watch.failure is not None:
        failure = Failure(str(watch.failure))
        raise failure from watch.failure.__cause__
    run = read_run(ending.record_dir or root, watch.attempt, ending.out, ending.value, watch.error, watch.notices)
    _check_earlier(run, own)
    return run


def _target(workflow: Workflow[Any]) -> str:
    """FILE, or FILE:NAME when the file holds several workflows: what `awf run` is given to go on."""
    if workflow.source_file is None:
        return workflow.name
    module = sys.modules.get(getattr(workflow.run, "__module__", ""))
    count = sum(isinstance(value, Workflow) for value in vars(module).values()) if module else 1
    return f"{workflow.source_file}:{workflow.name}" if count > 1 else str(workflow.source_file)


def _new_id(workflow: Workflow[Any], args: Args) -> str:
    try:
        run_id = workflow.run_id_for(args)
    except Exception as error:
        raise Failure(f"the workflow's id(args) failed: {type(error).__name__}: {error}") from error
    run_id = run_id or generated_id()
    problem = id_problem(run_id, "run id")
    if problem:
        raise Failure(problem)
    return run_id


def _run(request: RunRequest, book: ScriptBook, watch: Watch) -> AttemptEnd:
    """The attempt, with every agent scripted and a watch on stalls; the caller's signal handlers kept."""
    main = threading.current_thread() is threading.main_thread()
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    stop = threading.Event()
    watcher = threading.Thread(target=watch_stalls, args=(watch, stop), name="awf-test-stall-watch", daemon=True)
    watcher.start()
    try:
        with routed_to(ScriptedHarness(book, watch)):
            ending = run_attempt(request, watch)
    finally:
        stop.set()
        watcher.join()
        if main:
            for number, handler in handlers.items():
                signal.signal(number, handler)
    assert isinstance(ending, AttemptEnd)
    return ending


def _watched(workflow: Workflow[Any], watch: Watch) -> Workflow[Any]:
    """The workflow, run as it is, with its task known to the watch and its own error kept."""
    run = workflow.run

    async def watched(wf: Any, **args: Any) -> Any:
        watch.running(asyncio.get_running_loop(), asyncio.current_task())
        try:
            return await run(wf, **args)
        except asyncio.CancelledError:
            if watch.failure is not None:
                # Ended by the test: the attempt fails, saying why.
                raise Failure(str(watch.failure)) from None
            raise
        except BaseException as error:
            if watch.attempt:  # the attempt itself, not the look-ahead before it
                watch.error = error
            raise
        finally:
            watch.finished()

    return dataclasses.replace(workflow, run=watched)


def _check_earlier(run: Run[Any], own: set[str]) -> None:
    """A record the test gave that its stage cannot reuse, or never asked for, is the test's mistake."""
    ending = run.ending
    entered = [stage.name for stage in run.stages]
    if ending.outcome == "stopped" and ending.stage in own and ending.stage not in entered:
        # The record file the reason names is the harness's own, not one the test can edit.
        reason = re.sub(r" \([^()]*stages/[^()/]+\.json\)", "", ending.reason or "")
        raise Failure(f"earlier: stage {ending.stage}'s value cannot be reused: {reason}")
    never = sorted(name for name in own if name not in entered)
    if ending.outcome == "completed" and never:
        raise Failure(
            f"earlier names stage{'s' if len(never) > 1 else ''} {', '.join(never)}, which the attempt "
            f"never entered (it entered: {', '.join(entered) or 'none'}); check the stage names"
        )


def _check_used_up(book: ScriptBook, runs: list[Run[Any]]) -> None:
    left = book.left_over()
    if left:
        last = runs[-1].ending
        where = f" in {last.stage}" if last.stage else ""
        lines = [
            *left,
            f"(attempt {runs[-1].attempt} ended {last.outcome}{where}{': ' + last.reason if last.reason else ''})",
        ]
        raise Failure("\n".join(lines))
