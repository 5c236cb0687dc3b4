"""Exit codes, named once, and the one mapping from an error to its exit code and its message.

Every command raises what went wrong; `run_app` hands it to `report`, which prints it as
`awf: …` on stderr and, for `--json`, as `{"error": {...}}` on stdout, and returns its code.
"""

from __future__ import annotations

import json
from enum import IntEnum

from . import output


class ExitCode(IntEnum):
    """The seeds' exit codes. An attempt: completed and parked 0, failed and timed-out 1, a
    refusal 2, stopped 3, cancelled 128 + the signal. A command that reads runs: 0 a read that
    worked, 1 no such run, 2 a usage error, 3 a file that cannot be read."""

    COMPLETED = 0
    PARKED = 0
    READ_OK = 0
    FAILED = 1
    TIMED_OUT = 1
    NO_SUCH_RUN = 1
    REFUSED = 2
    USAGE = 2
    STOPPED = 3
    UNREADABLE = 3
    CANCELLED = 128  # plus the signal's number
    INTERRUPTED = 130  # Ctrl-C while a command that reads runs is waiting


class CommandError(Exception):
    """What a command could not do: its message, its exit code and its kind (for --json)."""

    def __init__(self, message: str, code: ExitCode, kind: str | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.kind: str = kind or KINDS.get(code, "error")
        self.detail = detail


# The kind a --json error names, by exit code, where the error does not say.
KINDS = {ExitCode.NO_SUCH_RUN: "no-such-run", ExitCode.USAGE: "refused", ExitCode.UNREADABLE: "unreadable"}


def classify(error: BaseException) -> tuple[str, ExitCode, str, str | None]:
    """The kind, exit code, message and detail of an error any command may raise."""
    from ..engine.errors import LoadError, Refusal
    from ..record.errors import RecordError, RecordWriteError

    if isinstance(error, CommandError):
        return error.kind, error.code, str(error), error.detail
    if isinstance(error, Refusal):
        return "refused", ExitCode.REFUSED, str(error), None
    if isinstance(error, LoadError):
        return "workflow-file", ExitCode(error.exit_code), str(error), error.detail
    if isinstance(error, RecordError):
        return "unreadable", ExitCode.UNREADABLE, f"the run's record cannot be read: {error}", None
    if isinstance(error, RecordWriteError):
        # Before the workflow ran: nothing ran, and the same command goes on once the disk takes writes.
        message = f"{error}\n  nothing ran; free the space or fix the folder, then run the same command again"
        return "write-failed", ExitCode.FAILED, message, None
    raise error


def report(error: BaseException, *, json_out: bool) -> int:
    """Say what went wrong (and, for --json, answer in JSON too); return its exit code."""
    kind, code, message, detail = classify(error)
    output.error(message)
    if detail:
        output.error_line(detail.rstrip())
    if json_out:
        output.result(
            json.dumps({"error": {"kind": kind, "message": message, "exit_code": int(code)}}, ensure_ascii=False)
        )
    return int(code)


def handled() -> tuple[type[BaseException], ...]:
    """The errors `report` knows."""
    from ..engine.errors import LoadError, Refusal
    from ..record.errors import RecordError, RecordWriteError

    return (CommandError, Refusal, LoadError, RecordError, RecordWriteError)
