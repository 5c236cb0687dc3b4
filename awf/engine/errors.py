"""Exceptions the engine raises into a workflow, and the ones it raises to its caller."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..record.file_kinds import WaitFields


class Stop(BaseException):
    """Raised by `wf.stop(reason)`. A BaseException, so `except Exception` cannot swallow it."""

    def __init__(
        self,
        reason: str,
        *,
        stage: str | None = None,
        redo: str | None = None,
        retry_after: float | None = None,
        retries: int = 5,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stage = stage
        # The stage the printed command should redo with --from-stage, when awf knows it.
        self.redo = redo
        # A stop worth retrying: awf serve (or awf wake) continues the run this many seconds after
        # it stops, doubling for each retry in a row, at most `retries` times.
        self.retry_after = retry_after
        self.retries = retries


class Retry(Stop):
    """`raise awf.Retry("the registry is down", after=60)`: the attempt ends stopped, and awf serve
    continues the run `after` seconds later, then twice as long after each retry in a row that
    stops again, at most `retries` times. The same as `wf.stop(reason, retry_after=, retries=)`."""

    def __init__(self, reason: str, *, after: float, retries: int = 5) -> None:
        check_retry(after, retries, "awf.Retry")
        super().__init__(str(reason), retry_after=float(after), retries=retries)


def check_retry(after: object, retries: object, where: str) -> None:
    """A retry's delay and count as a workflow gives them, or the WorkflowError that says what is wrong."""
    if isinstance(after, bool) or not isinstance(after, (int, float)) or not 0 < after < float("inf"):
        raise WorkflowError(f"{where}: the retry's delay must be a number of seconds above 0, not {after!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 1:
        raise WorkflowError(f"{where}: retries must be a whole number from 1, not {retries!r}")


class PlanStop(Stop):
    """A stage awf can neither reuse nor run: the attempt stops there, and no record changes."""


class StopAfter(Stop):
    """The stage --to-stage names has succeeded: the attempt ends stopped, changing no record,
    and a plain continue goes on after it."""


class Park(BaseException):
    """Raised where a wait cannot be answered now: the attempt ends parked, waiting on `waits`.

    Here, not in events.py, so an attempt of a workflow without events need not import events."""

    def __init__(self, waits: list[WaitFields]) -> None:
        super().__init__("waiting")
        self.waits = waits

    @property
    def text(self) -> str:
        parts = []
        for wait in self.waits:
            what = " or ".join(wait.get("names") or [])
            if wait.get("due"):
                what = f"for {what} or until {wait['due']}" if what else f"until {wait['due']}"
            else:
                what = f"for {what}"
            parts.append(what)
        return "waiting " + "; ".join(parts)


class WorkflowError(Exception):
    """A workflow broke a rule of the author API (a bad stage name, a stage inside a stage, …)."""


class MissingPackage(WorkflowError):
    """The workflow needs a package awf can use but does not require, such as pydantic for Python types."""

    def __init__(self, message: str, *, install: str) -> None:
        super().__init__(message)
        self.install = install  # the line that says what to install


class StageValueError(Exception):
    """A stage returned a value that cannot be recorded (not JSON, or not what its schema says)."""


class Refusal(Exception):
    """A request that cannot be carried out: exit 2 and start no attempt."""


class LoadError(Exception):
    """The workflow file cannot be loaded or holds no usable workflow. `raised`: its own code
    raised (or exited) as it loaded, a failure (exit 1); else it is refused (exit 2)."""

    def __init__(self, message: str, *, raised: bool = False, detail: str | None = None) -> None:
        super().__init__(message)
        self.raised = raised
        self.detail = detail


def mark_stage(error: BaseException, stage: str) -> BaseException:
    """Note on an exception the stage it came out of, so the ending can name it."""
    try:
        if getattr(error, "awf_stage", None) is None:
            error.awf_stage = stage  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return error


def stage_of(error: BaseException) -> str | None:
    return getattr(error, "awf_stage", None)
