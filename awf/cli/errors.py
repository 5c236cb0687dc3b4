"""Exit codes, named once, and the one mapping from an error to its exit code and its message.

Every command raises what went wrong; `run_app` hands it to `report`, which prints it as
`awf: …` on stderr and, for `--json`, as `{"error": {...}}` on stdout, and returns its code.
"""

from __future__ import annotations

import json
from enum import Enum, IntEnum

from . import output


class ExitCode(IntEnum):
    """The seeds' exit codes, each once. An attempt: completed and parked 0, failed and timed-out 1,
    a refusal 2, stopped 3, cancelled 128 + the signal (`engine/attempt_outcome.py`). A command
    that reads runs: what `Problem` gives each way it stops short, else 0."""

    OK = 0
    FAILED = 1
    REFUSED = 2
    STOPPED = 3
    CANCELLED = 128  # plus the signal's number
    INTERRUPTED = 130  # Ctrl-C while a command that reads runs is waiting


class Problem(Enum):
    """Each way a command stops short of what it was asked: the kind its `--json` error names and
    its exit code. The one table of both; a kind is never guessed from a code."""

    USAGE = ("usage", ExitCode.REFUSED)
    REFUSED = ("refused", ExitCode.REFUSED)
    WORKFLOW_FILE = ("workflow-file", ExitCode.REFUSED)  # missing, not Python, no workflow in it
    WORKFLOW_FILE_RAISED = ("workflow-file", ExitCode.FAILED)  # its own code raised as it loaded
    NO_SUCH_RUN = ("no-such-run", ExitCode.FAILED)
    NOT_RUNNING = ("not-running", ExitCode.FAILED)
    NOT_ENDED = ("not-ended", ExitCode.FAILED)
    WRITE_FAILED = ("write-failed", ExitCode.FAILED)
    UNREADABLE = ("unreadable", ExitCode.STOPPED)

    @property
    def kind(self) -> str:
        return self.value[0]

    @property
    def code(self) -> ExitCode:
        return self.value[1]


class CommandError(Exception):
    """What a command could not do: its message and the problem it is (its exit code and kind)."""

    def __init__(self, message: str, problem: Problem, detail: str | None = None) -> None:
        super().__init__(message)
        self.problem = problem
        self.detail = detail


def classify(error: BaseException) -> tuple[Problem, str, str | None]:
    """The problem, message and detail of an error any command may raise."""
    from ..engine.errors import LoadError, Refusal
    from ..record.errors import RecordError, RecordWriteError

    if isinstance(error, CommandError):
        return error.problem, str(error), error.detail
    if isinstance(error, Refusal):
        return Problem.REFUSED, str(error), None
    if isinstance(error, LoadError):
        problem = Problem.WORKFLOW_FILE_RAISED if error.raised else Problem.WORKFLOW_FILE
        return problem, str(error), error.detail
    if isinstance(error, RecordError):
        return Problem.UNREADABLE, f"the run's record cannot be read: {error}", None
    if isinstance(error, RecordWriteError):
        # Before the workflow ran: nothing ran, and the same command goes on once the disk takes writes.
        message = f"{error}\n  nothing ran; free the space or fix the folder, then run the same command again"
        return Problem.WRITE_FAILED, message, None
    raise error


def report(error: BaseException, *, json_out: bool) -> int:
    """Say what went wrong (and, for --json, answer in JSON too); return its exit code."""
    problem, message, detail = classify(error)
    output.error(message)
    if detail:
        output.error_line(detail.rstrip())
    if json_out:
        output.result(
            json.dumps(
                {"error": {"kind": problem.kind, "message": message, "exit_code": int(problem.code)}},
                ensure_ascii=False,
            )
        )
    return int(problem.code)


def handled() -> tuple[type[BaseException], ...]:
    """The errors `report` knows."""
    from ..engine.errors import LoadError, Refusal
    from ..record.errors import RecordError, RecordWriteError

    return (CommandError, Refusal, LoadError, RecordError, RecordWriteError)
