"""`awf attach WORKFLOW/ID [AGENT]`: this terminal shows the run's panes, to watch and type to its agents.

It attaches to the workspace of the run's latest attempt that has one open (awf's own tmux
server, never the user's default one), at AGENT's window when given. Detach as in any tmux
session (Ctrl-b d); the agents go on.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import output
from .errors import Problem
from .run_target import Where, find_run


def attach_command(*, target: str, agent: str | None, cwd: Path | None, run_root: Path | None) -> int:
    from ..agents.multiplexer import MultiplexerError
    from ..agents.workspaces import recorded_workspaces

    paths = find_run(target, Where.of(cwd, run_root))
    workspaces = recorded_workspaces(paths.log)
    if not workspaces:
        output.error(
            f'run {paths.name} has no panes: none of its agents ran in one (a runtime with "placement": '
            '"pane"); follow it with `awf watch` or `awf logs`'
        )
        return Problem.NO_SUCH_RUN.code
    if agent is not None:
        keys = sorted({key for workspace in workspaces for key in workspace.agents})
        workspaces = [workspace for workspace in workspaces if agent in workspace.agents]
        if not workspaces:
            output.error(f"agent {agent} of run {paths.name} never had a pane; the agents that had: {', '.join(keys)}")
            return Problem.NO_SUCH_RUN.code
    chosen = next((workspace for workspace in reversed(workspaces) if workspace.is_open()), None)
    if chosen is None:
        last = workspaces[-1]
        output.error(
            f"the panes of run {paths.name} are closed: attempt {last.attempt}'s workspace {last.name!r} "
            "closed with its attempt, or with the next run that opened a pane"
        )
        return Problem.NO_SUCH_RUN.code
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        output.error(
            f"awf attach shows the panes in this terminal, and this is not a terminal; the workspace is "
            f"{chosen.name!r} on `{chosen.multiplexer} -L {chosen.server}`"
        )
        return Problem.NO_SUCH_RUN.code
    mux = chosen.connect()
    if agent is not None and agent not in (windows := mux.window_names(chosen.name)):
        output.error(
            f"agent {agent}'s pane is closed; the workspace {chosen.name!r} has {', '.join(windows) or 'no panes open'}"
        )
        return Problem.NO_SUCH_RUN.code
    try:
        mux.attach(chosen.name, agent)  # returns only when it could not
    except (MultiplexerError, OSError) as error:
        output.error(f"could not attach to the workspace {chosen.name!r}: {error}")
    return Problem.NO_SUCH_RUN.code
