"""The attempt's agents: `wf.agents` made for the attempt, ended with it, and the agents a
crashed attempt left running, named by the next one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..record import folder
from ..record.errors import RecordError
from ..record.layout import RunPaths
from ..record.log import open_log
from .budget import check
from .context import AttemptState
from .observer import Observer
from .schema import Schema, load_schema


def attach(
    state: AttemptState, *, cwd: Path, deadline: float | None, sandbox: Any = None, source: Path | None = None
) -> None:
    """Give the attempt its `wf.agents`, made when the workflow first asks for them: most stages
    open no agent, and awf.agents costs milliseconds to import. `source`: the workflow's file, which
    with the modules it imported from beside it, agents in a sandbox get read-only."""

    def make() -> Any:
        from ..agents.agent import AgentSet
        from ..agents.host import Host

        def schema_of(spec: Any, what: str) -> Schema:
            return load_schema(spec, state.schema_base, what)

        return AgentSet(
            Host(
                run=state.paths.name,
                run_dir=state.paths.dir,
                attempt=state.attempt,
                cwd=cwd,
                stage=lambda: state.current_stage,
                deadline=deadline,
                load_schema=schema_of,
                progress=state.observer,
                cancel_reason=lambda: state.cancel_reason,
                timed_out=lambda: state.timed_out,
                sandbox=sandbox,
                protected=_runs_outside(source),
                check_budget=lambda agent, turn, reports: check(state, state.max_cost, agent, turn, reports),
                agent_limits=state.agent_limits,
                run_root=state.paths.root,
            )
        )

    state.make_agents = make


def _runs_outside(source: Path | None) -> tuple[str, ...]:
    """The workflow's file and its neighbours it imported: code every later attempt runs."""
    if source is None:
        return ()
    from .loader import neighbour_files

    real = source.resolve()
    return tuple(dict.fromkeys([str(real), *neighbour_files(real.parent)]))


def end(state: AttemptState) -> None:
    """End every agent of the attempt, and every process they started: the attempt is over."""
    if state.agents is not None:  # None when the workflow never asked for wf.agents
        state.agents.end_all()


def left_running(paths: RunPaths, history: folder.History | None) -> list[Any]:
    """The agents still running of every attempt that never ended and whose process is gone."""
    if history is None:
        return []
    crashed = [attempt.number for attempt in history.attempts if attempt.end is None and not attempt.is_live()]
    if not crashed:
        return []
    from ..agents.leftovers import PROCESS_KINDS
    from ..agents.leftovers import left_running as find

    return list(find(paths.log, crashed, history.lines(PROCESS_KINDS)))


def leftovers_refusal(paths: RunPaths, left: list[Any]) -> str:
    """Why a continue does not start beside agents a crashed attempt left running, and what to do."""
    lines = [
        f"run {paths.name}: "
        + (
            f"{len(left)} agents of an interrupted attempt still run"
            if len(left) > 1
            else "an agent of an interrupted attempt still runs"
        )
        + ", and may still be changing files; nothing was started:"
    ]
    for one in left:
        where = f" in stage {one.stage}" if one.stage else ""
        lines.append(
            f"  agent {one.agent} of attempt {one.attempt}{where} (pid {one.pid}): end it with {one.end_command}"
        )
    lines.append(
        "go on with --end-leftovers to end them first, or --ignore-leftovers to run beside them; "
        f"awf cancel {paths.name} ends them and starts nothing"
    )
    return "\n".join(lines)


def end_left_running(left: list[Any], observer: Observer) -> list[str]:
    """End each leftover's process group and wait for it; the ones that would not end."""
    stuck = []
    for one in left:
        if one.end():
            observer.notice(f"ended agent {one.agent} of attempt {one.attempt} (pid {one.pid}) and its process group")
        else:
            stuck.append(f"agent {one.agent} (pid {one.pid}) did not end")
    return stuck


def settle_unrecorded(
    paths: RunPaths, attempt: int, observer: Observer, *, own: bool = False, history: folder.History | None = None
) -> None:
    """Count what earlier attempts' turns used and could not record, read from their agents'
    sessions, and say so: `attempt 2 used 41,200 tokens ($0.31) that it could not record; counted now`.
    With `own`, the attempt's own turns, as it completes: no attempt comes after it to count them.
    Given the attempt's `history`, a log in which no turn ever started is not read again."""
    if history is not None and not own and not history.has("turn-start"):
        return  # no agent ever took a turn: nothing to import, nothing to read
    from ..agents.recovery import KINDS, settle

    if history is None:
        try:
            open_log(paths.log).close()
        except (OSError, RecordError):
            return
    # The attempt's own turns were appended after its history was read: read on from there.
    lines = history.lines(KINDS, validate=False, since=own) if history is not None else None
    for found in settle(paths.log, attempt, own=own, lines=lines):
        observer.notice(found.line())


def name_left_running(paths: RunPaths, attempt: int, observer: Observer, history: folder.History) -> None:
    """Name each agent of an interrupted attempt that still runs, with its pid, and the workspace
    its agents' panes were in."""
    from ..agents.leftovers import PROCESS_KINDS, left_running
    from ..agents.workspaces import PANE_KINDS, name_interrupted

    for left in left_running(paths.log, [attempt], history.lines(PROCESS_KINDS)):
        observer.notice(str(left))
    for line in name_interrupted(paths.log, attempt, paths.name, history.lines(PANE_KINDS)):
        observer.notice(line)
