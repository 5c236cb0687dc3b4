"""Every file of the record awf writes whole (and the lines of the inbox): its shape and its one constructor.

Each shape follows its schema in `schemas/` key for key (a test keeps them in step); each
constructor stamps the format version. `values.json` and sandbox profiles are written by people,
not by awf, and have a schema but no constructor.
"""

# No `from __future__ import annotations`: on Python 3.11 a TypedDict reads NotRequired off
# evaluated annotations only, and the test that keeps these in step with the schema reads them.

from typing import Any, Literal, NotRequired, TypedDict, Unpack

from .errors import RecordError
from .schemas import FORMAT_VERSION, JsonSchema


class _Version(TypedDict):
    version: int  # the format of the file: FORMAT_VERSION


class RetryFields(TypedDict):
    """A stop worth retrying, as the attempt-end line and out.json keep it."""

    number: int  # which retry: the stops with a retry in a row, this one counted
    of: int  # the most in a row the workflow allows (retries=)
    after: float  # seconds from the attempt's end to the retry
    at: str  # when the retry is due (ISO 8601)


class WaitFields(TypedDict):
    """One thing a parked run waits for, as the attempt-end line and out.json keep it."""

    wait: str  # {stage}/{kind}:{names}#{occurrence}
    names: NotRequired[list[str]]  # the events that answer it
    due: NotRequired[str | None]  # when a timer or a sleep is due (ISO 8601)


class StageError(TypedDict, total=False):
    type: str  # the exception's class
    message: str
    traceback: str


class ForkedRecord(TypedDict):
    run: str  # WORKFLOW/ID of the run the record was copied from
    attempt: int  # the attempt of that run that wrote it


StageOutcome = Literal["succeeded", "failed", "stopped"]
StageOrigin = Literal["ran", "provided", "skipped"]


class StageRecordFields(TypedDict):
    stage: str
    outcome: StageOutcome  # only a succeeded record is reused
    origin: StageOrigin  # ran: its work returned it; provided: --values gave it; skipped: --skip-stage kept its value
    attempt: int  # the attempt that wrote it
    started: NotRequired[str | None]  # ISO 8601 time its work began
    ended: NotRequired[str]  # ISO 8601 time it was written
    has_result: NotRequired[bool]  # the stage declared a result schema
    value: NotRequired[Any]  # what its work returned; a person may edit it
    summary: NotRequired[str | None]
    reason: NotRequired[str | None]  # why it failed or stopped
    error: NotRequired[StageError | None]  # what its work raised
    workflow_version: NotRequired[str | None]
    stage_version: NotRequired[str | None]  # wf.stage(..., version=): a continue checks it against the code's
    cache_key: NotRequired[Any]  # wf.stage(..., cache_key=): any JSON value, checked as stage_version is
    value_of: NotRequired[int]  # a skipped stage: the attempt whose record's value it kept
    branch_of: NotRequired[str]  # a fan-out's branch, `{branch_of}@{key}`: the fan-out it is of
    branches: NotRequired[list[str]]  # a fan-out: its branches' keys, in the items' order
    forked_from: NotRequired[ForkedRecord]  # copied from another run by awf fork


class StageRecord(_Version, StageRecordFields):
    """stages/{stage}.json: the current record of one stage, what a continue reuses."""


# The current record of each stage by name, or the error that keeps it from being read.
StageRecords = dict[str, StageRecord | RecordError]


def stage_record(**fields: Unpack[StageRecordFields]) -> StageRecord:
    return {"version": FORMAT_VERSION, **fields}


class OutWorktree(TypedDict):
    path: str
    branch: str
    base: str  # the commit the branch was made from


class OutStage(TypedDict):
    """A stage the attempt entered, in out.json's `stages`."""

    stage: str
    how: str  # ran, reused, provided, skipped
    outcome: NotRequired[str]
    attempt: NotRequired[int]  # the attempt whose record it is
    summary: NotRequired[str | None]


class CostFigures(TypedDict):
    """What some turns cost: the dollars known, and how many turns' cost is not."""

    cost: float | None  # US dollars, rounded to the cent's ten-thousandth; None: no turn's cost is known
    unknown: int
    turns: int


class OutCost(TypedDict):
    attempt: CostFigures  # this attempt's agents
    run: CostFigures  # every attempt's so far


class OutFields(TypedDict):
    workflow: str
    id: str
    attempt: int
    outcome: str  # as the attempt-end line's
    exit_code: int
    stage: NotRequired[str | None]  # the stage the attempt ended in
    reason: NotRequired[str | None]
    value: NotRequired[Any]  # the workflow's return value, on completed
    go_on: NotRequired[str | None]  # the command that goes on
    report: NotRequired[str | None]  # the run's report.md, when one was written
    report_error: NotRequired[str]  # what the workflow's report raised
    record: NotRequired[str]  # the run's folder
    started: NotRequired[str]
    ended: NotRequired[str]
    stages: NotRequired[list[OutStage]]  # each stage the attempt entered, and how
    needs: NotRequired[dict[str, JsonSchema]]  # a start part-way that stopped for values: each stage's result schema
    waits: NotRequired[list[WaitFields]]  # what a parked run waits for
    retry: NotRequired[RetryFields]  # a stop worth retrying: when awf serve continues the run
    worktree: NotRequired[OutWorktree]  # the run's own git worktree, with --worktree
    cost: NotRequired[OutCost]  # the attempt's agents' and the run's


class OutRecord(_Version, OutFields):
    """out.json: the output of the last ended attempt, what `awf run --json` prints."""


def out_record(**fields: Unpack[OutFields]) -> OutRecord:
    return {"version": FORMAT_VERSION, **fields}


class AttemptPidFields(TypedDict):
    attempt: int
    pid: int
    process_start: NotRequired[str | None]  # when that process started: it tells a reused pid
    host: NotRequired[str]


class AttemptPid(_Version, AttemptPidFields):
    """attempt.pid: the live attempt's process."""


def attempt_pid(**fields: Unpack[AttemptPidFields]) -> AttemptPid:
    return {"version": FORMAT_VERSION, **fields}


class WakePidFields(TypedDict):
    attempt: int  # the attempt the continue will be
    pid: int
    process_start: NotRequired[str | None]


class WakePid(_Version, WakePidFields):
    """wake.pid: the continue a wake started, until it has ended."""


def wake_pid(**fields: Unpack[WakePidFields]) -> WakePid:
    return {"version": FORMAT_VERSION, **fields}


class AgentFileFields(TypedDict):
    run: str  # workflow/id
    attempt: int
    agent: str
    harness: str
    token_sha256: str  # what `awf answer`'s token must hash to
    turn: int  # the turn it is on


class AgentFile(_Version, AgentFileFields):
    """agents/{attempt}/{key}/agent.json: one agent of an attempt, as `awf answer` finds it."""


def agent_file(**fields: Unpack[AgentFileFields]) -> AgentFile:
    return {"version": FORMAT_VERSION, **fields}


class TurnFileFields(TypedDict):
    run: str
    attempt: int
    agent: str
    turn: int
    schema: JsonSchema | None  # what an answer must fit; null: text
    opened: NotRequired[str]
    deadline: NotRequired[str | None]
    label: NotRequired[str]  # for `awf watch`, which shows the turn as `awf run` does


class TurnFile(_Version, TurnFileFields):
    """agents/{attempt}/{key}/turn-{n}/turn.json: a turn an agent answers."""


def turn_file(**fields: Unpack[TurnFileFields]) -> TurnFile:
    return {"version": FORMAT_VERSION, **fields}


class TurnOutcomeFields(TypedDict):
    turn: int
    outcome: str  # answered, unanswered, blocked, timed-out, failed, cancelled
    by: str  # what settled it
    value: NotRequired[Any]
    reason: NotRequired[str | None]
    at: NotRequired[str]


class TurnOutcome(_Version, TurnOutcomeFields):
    """agents/{attempt}/{key}/turn-{n}/outcome.json: how a turn settled, written once."""


def turn_outcome(**fields: Unpack[TurnOutcomeFields]) -> TurnOutcome:
    return {"version": FORMAT_VERSION, **fields}


class EventLineFields(TypedDict):
    id: str  # --event-id, or one made from the time and four random bytes
    name: str  # one of the events the workflow declares
    value: NotRequired[Any]  # --data, checked against the event's schema when it was sent
    sent: str  # ISO 8601, local time with its offset
    pid: NotRequired[int]  # the awf send that queued it


class EventLine(_Version, EventLineFields):
    """A line of events.jsonl: one event sent to a run with events."""

    kind: Literal["event"]


def event_line(**fields: Unpack[EventLineFields]) -> EventLine:
    return {"version": FORMAT_VERSION, "kind": "event", **fields}


# Each file's schema and its shape.
SHAPES: dict[str, type] = {
    "stage": StageRecord,
    "out": OutRecord,
    "attempt-pid": AttemptPid,
    "wake-pid": WakePid,
    "agent": AgentFile,
    "turn": TurnFile,
    "turn-outcome": TurnOutcome,
    "event": EventLine,
}
# Files people write, which awf only reads.
WRITTEN_BY_PEOPLE = frozenset({"values", "sandbox"})
# The schemas of what commands print (--json), not of files of the record.
PRINTED = frozenset({"runs", "logs", "log-entry"})
