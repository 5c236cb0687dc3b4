"""The attempt's agents: `wf.agents` made for the attempt, ended with it, and the agents a
crashed attempt left running, named by the next one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..record.layout import RunPaths
from .context import AttemptState
from .observer import Observer
from .schema import Schema, load_schema


def attach(state: AttemptState, *, cwd: Path, deadline: float | None, sandbox: Any = None) -> None:
    """Give the attempt its `wf.agents`, made when the workflow first asks for them: most stages
    open no agent, and awf.agents costs milliseconds to import."""

    def make() -> Any:
        from ..agents.handles import AgentSet, Host

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
            )
        )

    state.make_agents = make


def end(state: AttemptState) -> None:
    """End every agent of the attempt, and every process they started: the attempt is over."""
    if state.agents is not None:  # None when the workflow never asked for wf.agents
        state.agents.end_all()


def name_left_running(paths: RunPaths, attempt: int, observer: Observer) -> None:
    """Name each agent of an interrupted attempt that still runs, with its pid, and the workspace
    its agents' panes were in."""
    from ..agents.leftovers import left_running
    from ..agents.workspaces import name_interrupted

    for left in left_running(paths.log, [attempt]):
        observer.notice(str(left))
    for line in name_interrupted(paths.log, attempt, paths.name):
        observer.notice(line)
