"""`awf runs`: the runs under the run root, newest first, or one run in full."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..record.errors import RecordError
from ..record.roots import workflow_names
from . import output
from .errors import ExitCode, Problem
from .run_target import TargetError, Where, find_run, split_name

if TYPE_CHECKING:
    from ..agents.leftovers import LeftRunning
    from ..record.layout import RunPaths
    from ..record.summary import RunSummary


def runs_command(
    *,
    target: str | None = None,
    status: list[str] | None = None,
    json_out: bool = False,
    cwd: Path | None = None,
    run_root: Path | None = None,
) -> int:
    where = Where.of(cwd, run_root)
    wanted = _statuses(status)
    workflow, run_id = split_name(target) if target else (None, None)
    if run_id is not None:
        if wanted:
            raise TargetError("--status filters a list of runs; it does not go with WORKFLOW/ID", Problem.USAGE)
        return _one(find_run(target or "", where), where, json_out)
    return _listing(where, workflow, wanted, json_out)


def _statuses(given: list[str] | None) -> set[str]:
    if not given:
        return set()
    from ..record.summary import STATUSES

    wanted = {word.strip() for item in given for word in item.split(",") if word.strip()}
    unknown = sorted(wanted - set(STATUSES))
    if unknown:
        raise TargetError(
            f"--status {', '.join(unknown)}: a run's status is one of {', '.join(STATUSES)}", Problem.USAGE
        )
    return wanted


def _listing(where: Where, workflow: str | None, wanted: set[str], json_out: bool) -> int:
    names = workflow_names(where.root)
    # A root with no runs is answered before the code that reads them is imported.
    runs, problems = _summaries(where.root, workflow, wanted) if names and workflow in (None, *names) else ([], [])
    left = _left_running(where.root, runs)
    if json_out:
        output.result(
            json.dumps(
                {
                    "version": 1,
                    "root": str(where.root),
                    "runs": [
                        {**run.as_json(), "left_running": [one.as_json() for one in left.get(run.dir, [])]}
                        for run in runs
                    ],
                    "problems": [{"file": str(problem.path), "problem": problem.problem} for problem in problems],
                },
                ensure_ascii=False,
                indent=2,
            )
        )
    elif runs:
        from ..view.runs_table import listing

        counts = {f"{run.workflow}/{run.id}": len(left.get(run.dir, [])) for run in runs if run.dir in left}
        output.result(listing(runs, left=counts))
    elif not problems:
        kind = f"of {workflow} " if workflow else ""
        status = f"with status {', '.join(sorted(wanted))} " if wanted else ""
        output.usage(f"no runs {kind}{status}under {where.root}")
    for unreadable in problems:
        output.error(f"a run's record cannot be read: {unreadable}")
    return Problem.UNREADABLE.code if problems else ExitCode.OK


def _summaries(root: Path, workflow: str | None, wanted: set[str]) -> tuple[list[RunSummary], list[RecordError]]:
    """The runs under `root` (of `workflow`, in a wanted status), newest first, and the records
    that cannot be read."""
    from ..record.summary import run_folders
    from ..record.summary_cache import SummaryCache

    runs: list[RunSummary] = []
    problems: list[RecordError] = []
    kept = SummaryCache(root)
    for paths in run_folders(root, workflow):
        try:
            summary = kept.summary(paths)
        except RecordError as problem:
            problems.append(problem)
            continue
        if summary is not None and (not wanted or summary.status in wanted):
            runs.append(summary)
    kept.save(whole=workflow is None)
    # Newest first; runs made in one millisecond by name, never in the order the folder lists them.
    runs.sort(key=lambda run: (run.workflow, run.id))
    runs.sort(key=lambda run: run.started or "", reverse=True)
    if any(run.status == "queued" for run in runs):
        _places(root, runs)
    return runs, problems


def _left_running(root: Path, runs: list[RunSummary]) -> dict[Path, list[LeftRunning]]:
    """The agents each interrupted run's crashed attempt left running, by the run's folder."""
    crashed = [run for run in runs if run.status == "interrupted"]
    if not crashed:
        return {}
    from ..agents.leftovers import left_by_crashes
    from ..record.layout import RunPaths

    return {run.dir: left_by_crashes(RunPaths(root, run.workflow, run.id).log) for run in crashed}


def _places(root: Path, runs: list[RunSummary]) -> None:
    """Each queued run's place in the queue awf serve starts, read across the whole run root."""
    from ..record.queue import read_queue

    queue = read_queue(root)
    for run in runs:
        if run.status == "queued":
            run.place = queue.place(f"{run.workflow}/{run.id}")


def _one(paths: RunPaths, where: Where, json_out: bool) -> int:
    from ..record.detail import read_detail

    try:
        run = read_detail(paths, where.here)
    except FileNotFoundError:
        raise TargetError(
            f"there is no run {paths.name}: its log is gone from {paths.dir}", Problem.NO_SUCH_RUN
        ) from None
    worktree = run.history.run.get("worktree")
    if isinstance(worktree, dict) and Path(str(worktree.get("path"))).is_dir():
        from ..engine.worktree import changed

        run.worktree_changes = changed(Path(str(worktree["path"])))
    from ..agents.leftovers import left_by_crashes, left_lines

    left = left_by_crashes(paths.log)
    if json_out:
        shown = {**run.as_json(), "left_running": [one.as_json() for one in left]}
        output.result(json.dumps(shown, ensure_ascii=False, indent=2))
    else:
        from ..view.runs_table import detail

        output.result(detail(run, left=left_lines(left)))
    for unreadable in run.problems:
        output.error(f"a file of the run cannot be read: {unreadable}")
    return Problem.UNREADABLE.code if run.problems else ExitCode.OK
