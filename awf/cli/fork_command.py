"""`awf fork WORKFLOW/ID`: a new run of the same workflow that starts with the run's stage records.

The source run is only read. The fork is made whole or not at all; with `--run FILE` its first
attempt follows at once, and the command exits with that attempt's code.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from ..engine.errors import Refusal
from ..engine.fork import Forked, fork
from . import output
from .errors import ExitCode
from .run_target import Where, find_run


def fork_command(  # noqa: PLR0913 — a command's function takes its options one by one, as app.py hands them over
    *,
    target: str,
    new_id: str | None,
    from_stage: str | None,
    values: Path | None,
    run_file: str | None,
    cwd: Path | None,
    run_root: Path | None,
    color: bool = True,
) -> int:
    where = Where.of(cwd, run_root)
    source = find_run(target, where)
    if values is not None:
        if from_stage is None:
            raise Refusal("--values goes only with --from-stage: name the stage the fork starts at")
        from ..engine.values_file import read_values

        read_values(values)  # a values file that cannot be used is refused before the fork is made
    forked = fork(source, new_id=new_id, from_stage=from_stage)
    # A continue finds the fork where the fork found its source: through the same run root.
    root = where.root if (cwd is not None or run_root is not None) else None
    copied = ", ".join(forked.copied) or "no stage"
    at = f"@{from_stage}" if from_stage else ""
    output.error_line(f"forked {source.name}{at} as {forked.paths.name}: copied the records of {copied}")
    if forked.worktree is not None:
        output.error_line(
            f"its worktree {forked.worktree.path} is made on branch {forked.worktree.branch} "
            f"(from {forked.worktree.base[:12]}) as its first attempt starts"
        )
    if run_file is None:
        output.result(forked.paths.name)
        output.error_line(f"go on: {_go_on(forked, root, values, where.here)}")
        return int(ExitCode.OK)
    from .run_command import run_command

    return run_command(
        file=run_file,
        run_id=forked.paths.id,
        resume=True,
        from_stage=from_stage if values is not None else None,
        values=values,
        run_root=root,
        no_color=not color,
    )


def _go_on(forked: Forked, root: Path | None, values: Path | None, here: Path) -> str:
    """The command whose continue goes on with the fork: its first attempt."""
    file = forked.file or "FILE"
    try:
        file = str(Path(file).relative_to(here))
    except ValueError:
        pass
    words = ["awf", "run", file, "--id", forked.paths.id, "--continue"]
    if root is not None:
        words += ["--run-root", str(root)]
    if values is not None and forked.from_stage is not None:
        words += ["--from-stage", forked.from_stage, "--values", str(values)]
    return shlex.join(words)
