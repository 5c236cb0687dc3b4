"""What `awf run` was asked to do, and the command that goes on from an attempt."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..record.entries import Args


@dataclass
class RunRequest:
    """The flags of one `awf run`."""

    target: str  # FILE or FILE:NAME, as typed
    run_id: str | None = None
    resume: bool = False  # --continue
    timeout: float | None = None
    timeout_text: str | None = None
    cwd: Path | None = None  # --cwd as given
    run_root: Path | None = None
    argv: list[str] | None = None  # the words after `--`; None when none were given
    from_stage: str | None = None
    to_stage: str | None = None  # --to-stage: the attempt ends once this stage has succeeded
    skip_stages: list[str] = field(default_factory=list)  # --skip-stage: stages whose work is not run
    values_file: Path | None = None
    preview: bool = False  # --plan: look ahead, run nothing
    # Agents a crashed attempt left running: a continue refuses to start beside them unless told.
    end_leftovers: bool = False
    ignore_leftovers: bool = False
    sandbox: str | None = None  # --sandbox as given: a profile's name or a JSON file
    max_cost: float | None = None  # --max-cost, in US dollars
    max_cost_text: str | None = None
    worktree: bool = False  # --worktree: a git worktree and a branch of the run's own
    base: str | None = None  # --base: the commit the worktree's branch is made from
    max_agents_text: str | None = None  # --max-agents as given
    agent_limits: dict[str, int] = field(default_factory=dict)  # turns of a runtime at once, across the run root
    share_folder: bool = False  # --share-folder: work beside other runs' attempts in one folder
    # What `awf check` finds in the workflow file: said as the attempt starts, never before a refusal.
    warnings: list[str] = field(default_factory=list)
    # For callers in Python (awf.testing): the workflow itself, and its args without prepare.
    workflow: Any = None
    args: Args | None = None

    def timeout_said(self) -> str | None:
        """--timeout as the user gave it; in words for a caller in Python that gave only seconds."""
        if self.timeout is None:
            return None
        if self.timeout_text:
            text = self.timeout_text.strip()
            return f"{text}s" if text.replace(".", "", 1).isdigit() else text  # a bare number is seconds
        from .durations import format_duration

        return format_duration(self.timeout)

    def go_on(
        self, run_id: str, *, from_stage: str | None = None, values: str | None = None, max_cost: float | None = None
    ) -> str:
        """The exact command that adds the next attempt to this run."""
        words = ["awf", "run", self.target, "--id", run_id, "--continue"]
        if self.cwd is not None:
            words += ["--cwd", str(self.cwd)]
        if self.run_root is not None:
            words += ["--run-root", str(self.run_root)]
        if from_stage:
            words += ["--from-stage", from_stage]
        if max_cost is not None:
            words += ["--max-cost", f"{max_cost:.2f}"]
        import shlex  # deferred: most attempts complete and print no command

        command = shlex.join(words)
        if values:
            command += f" --values {values}"
        return command
