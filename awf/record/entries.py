"""Every kind of run.jsonl line: its shape, its one constructor, and whether its append is fsynced.

Each kind has a `...Fields` TypedDict (what its writer gives), a `...Line` TypedDict (those
fields with `version`, `kind` and `at`, as the line is on disk) and one constructor named for
the kind. The shapes follow `schemas/log-entry.schema.json` key for key: a test keeps them in
step. Lines are appended with `append`, which fsyncs a line unless its kind only reports
progress (`PROGRESS_KINDS`): the choice belongs to the kind, not to the place that writes it.
"""

# No `from __future__ import annotations`: on Python 3.11 a TypedDict reads NotRequired off
# evaluated annotations only, and the test that keeps these in step with the schema reads them.

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, Unpack, cast

from .clock import now_iso
from .file_kinds import RetryFields, StageRecord, WaitFields
from .files import ProgressLines, append_line
from .schemas import FORMAT_VERSION, JsonSchema


class _Head(TypedDict):
    version: int  # the format of the line: FORMAT_VERSION
    at: str  # ISO 8601 time the line was written


# --- the run and its attempts ---------------------------------------------------------------


class WorktreeFields(TypedDict):
    """Where a run started with --worktree works: its git worktree, on which branch, from which commit."""

    repository: str  # the checkout the run was started in, which keeps the worktree's git data
    path: str  # the worktree's top folder
    branch: str
    base: str  # the commit the branch was made from
    base_ref: str  # --base as given ("HEAD" when not)


# JSON whose keys are another's to define, kept as it was given:
# a workflow's arguments, as its `prepare` made them (the keys are its function's parameters),
Args: TypeAlias = dict[str, Any]
# and an agent's runtime: its `harness`, and the options that harness defines and checks.
RuntimeOptions: TypeAlias = dict[str, Any]


class SandboxRecord(TypedDict, total=False):
    """The sandbox profile a run's agents run in (schemas/sandbox.schema.json): awf writes every
    field; its schema requires none, and a profile file given to --sandbox may leave any out."""

    profile: str  # its name: a built-in one, or the file it was read from
    read: list[str]  # folders they may read
    write: list[str]  # and write
    network: list[str]  # hosts they may reach
    limits: dict[str, float | None]  # processes, open_files, cpu_seconds, tmp_mib, shm_mib; None: none


class ForkedFromFields(TypedDict):
    """The run a fork was made from (awf fork), and the stage its copied records end before."""

    run: str  # WORKFLOW/ID
    stage: str | None  # None: every succeeded record was copied


class RunFields(TypedDict):
    workflow: str
    id: str
    argv: list[str]  # the words after `--`, which prepare made the run's args of
    cwd: str  # the folder the run works in, absolute, as it was when the run was made
    # The same folder relative to the one holding the run root's `.awf`, when it lies inside it:
    # a record copied or moved with that folder works in the same place in the copy.
    cwd_relative: NotRequired[str]
    worktree: NotRequired[WorktreeFields]  # the run's own git worktree, with --worktree
    share_folder: NotRequired[bool]  # its attempts may work beside other runs' in one folder
    sandbox: NotRequired[SandboxRecord | None]  # the --sandbox profile
    file: NotRequired[str]  # the workflow's file
    workflow_version: NotRequired[str | None]
    args: NotRequired[Args]  # given whole by a caller in Python, who did not call prepare
    # The events the workflow declares, each with the schema of its data (None: any data).
    events: NotRequired[dict[str, JsonSchema | None]]
    forked_from: NotRequired[ForkedFromFields]  # made by awf fork of another run
    trace_id: NotRequired[str]  # the OpenTelemetry trace of every attempt (record/trace_ids.py)
    trace_parent: NotRequired[str]  # the TRACEPARENT it was made under: its first attempt's parent


class RunLine(_Head, RunFields):
    kind: Literal["run"]


def run(**fields: Unpack[RunFields]) -> RunLine:
    """The first line of every run.jsonl."""
    return {"version": FORMAT_VERSION, "kind": "run", "at": now_iso(), **fields}


class PlacedFields(TypedDict):
    """Where a scheduler placed an attempt."""

    on: Literal["ray", "serve"]  # a Ray cluster, or the queue awf serve starts
    node: NotRequired[str | None]  # the node it chose
    token: NotRequired[str | None]  # the token of the `queued` line the attempt answers


# The options an attempt was started with (`continue` is a Python keyword: spelled as a call).
# Each is recorded as given, None or False when not; older records may lack some.
AttemptFlags = TypedDict(
    "AttemptFlags",
    {
        "continue": bool,
        "from_stage": str | None,
        "to_stage": str | None,
        "skip_stage": list[str] | None,
        "values": str | None,  # the --values file
        "timeout": str | None,  # as given: 30m
        "max_cost": str | None,  # as given: 2.50
    },
    total=False,
)


class AttemptStartFields(TypedDict):
    attempt: int
    pid: int  # the attempt's process
    process_start: NotRequired[str | None]  # when that process started: it tells a reused pid
    host: NotRequired[str]
    placed: NotRequired[PlacedFields]  # where a scheduler placed it
    file: NotRequired[str]
    workflow_version: NotRequired[str | None]
    flags: NotRequired[AttemptFlags]  # the options the attempt was started with
    max_cost: NotRequired[float | None]  # the run's budget in US dollars
    deadline: NotRequired[str | None]  # ISO 8601 time --timeout ends the attempt at
    events: NotRequired[dict[str, JsonSchema | None]]
    sandbox: NotRequired[SandboxRecord | None]  # the profile its agents ran in: the run's, as it started


class AttemptStartLine(_Head, AttemptStartFields):
    kind: Literal["attempt-start"]


def attempt_start(**fields: Unpack[AttemptStartFields]) -> AttemptStartLine:
    return {"version": FORMAT_VERSION, "kind": "attempt-start", "at": now_iso(), **fields}


class AttemptEndFields(TypedDict):
    attempt: int
    outcome: str  # completed, parked, stopped, failed, timed-out, cancelled
    exit_code: int
    stage: NotRequired[str | None]  # the stage the attempt ended in
    reason: NotRequired[str | None]
    after: NotRequired[str | None]  # the last stage it recorded
    ran: NotRequired[list[str]]  # the stages whose work it ran
    go_on: NotRequired[str | None]  # the command that goes on
    waits: NotRequired[list[WaitFields]]  # what a parked run waits for
    retry: NotRequired[RetryFields]  # a stop worth retrying: when awf serve continues the run


class AttemptEndLine(_Head, AttemptEndFields):
    kind: Literal["attempt-end"]


def attempt_end(**fields: Unpack[AttemptEndFields]) -> AttemptEndLine:
    return {"version": FORMAT_VERSION, "kind": "attempt-end", "at": now_iso(), **fields}


class QueuedFields(TypedDict):
    on: Literal["ray", "serve"]  # the scheduler: a Ray cluster, or the queue awf serve starts
    token: str  # names this placement; the attempt that answers it carries it in `placed`
    by: NotRequired[str]  # the host that placed it
    resources: NotRequired[dict[str, float]]  # on ray: what the attempt asks of a node, --ray-resources
    priority: NotRequired[int]  # on serve: higher starts first; among equals, the oldest line first
    command: NotRequired[list[str]]  # on serve: the words after `awf` that start the attempt
    cwd: NotRequired[str]  # on serve: the folder the attempt's process starts in
    interrupted: NotRequired[int]  # queued again by serve: its attempt that was interrupted


class QueuedLine(_Head, QueuedFields):
    kind: Literal["queued"]


def queued(**fields: Unpack[QueuedFields]) -> QueuedLine:
    return {"version": FORMAT_VERSION, "kind": "queued", "at": now_iso(), **fields}


class UnqueuedFields(TypedDict):
    token: str  # the `queued` line withdrawn
    reason: str


class UnqueuedLine(_Head, UnqueuedFields):
    kind: Literal["unqueued"]


def unqueued(**fields: Unpack[UnqueuedFields]) -> UnqueuedLine:
    return {"version": FORMAT_VERSION, "kind": "unqueued", "at": now_iso(), **fields}


class CancelFields(TypedDict):
    attempt: int
    pid: int  # the attempt's process, on its host
    by: NotRequired[str]  # the host awf cancel ran on
    sent: NotRequired[bool]  # awf cancel sent SIGTERM itself
    retry: NotRequired[bool]  # the attempt had stopped with a retry due: awf cancel withdrew the retry


class CancelLine(_Head, CancelFields):
    kind: Literal["cancel"]


def cancel(**fields: Unpack[CancelFields]) -> CancelLine:
    return {"version": FORMAT_VERSION, "kind": "cancel", "at": now_iso(), **fields}


class EditedFields(TypedDict):
    stage: str
    by: str  # the user who ran awf set
    old: str  # sha256 of the old value, as canonical JSON
    new: str  # and of the new one


class EditedLine(_Head, EditedFields):
    kind: Literal["edited"]


def edited(**fields: Unpack[EditedFields]) -> EditedLine:
    """awf set replaced a stage's current record value: no attempt wrote it."""
    return {"version": FORMAT_VERSION, "kind": "edited", "at": now_iso(), **fields}


class ReportFields(TypedDict):
    attempt: int
    text: str | None  # the markdown the workflow's report returned
    error: NotRequired[str]  # what the report raised, or what was wrong with what it returned


class ReportLine(_Head, ReportFields):
    kind: Literal["report"]


def report(**fields: Unpack[ReportFields]) -> ReportLine:
    return {"version": FORMAT_VERSION, "kind": "report", "at": now_iso(), **fields}


class TornFields(TypedDict):
    note: NotRequired[str]  # what cut the line short
    text: NotRequired[str]  # the line's bytes, as text


class TornLine(_Head, TornFields):
    kind: Literal["torn"]


def torn(*, at: str | None = None, **fields: Unpack[TornFields]) -> TornLine:
    """A line a crash cut short, kept as text; `at`: when it was set aside, or the line before's."""
    return {"version": FORMAT_VERSION, "kind": "torn", "at": now_iso() if at is None else at, **fields}


# --- stages ---------------------------------------------------------------------------------


class StageStartFields(TypedDict):
    attempt: int
    stage: str
    branch_of: NotRequired[str]  # a fan-out's branch: the fan-out it is of


class StageStartLine(_Head, StageStartFields):
    kind: Literal["stage-start"]


def stage_start(**fields: Unpack[StageStartFields]) -> StageStartLine:
    return {"version": FORMAT_VERSION, "kind": "stage-start", "at": now_iso(), **fields}


class StageFields(TypedDict):
    attempt: int
    stage: str
    record: StageRecord  # the record as stages/{stage}.json has it


class StageLine(_Head, StageFields):
    kind: Literal["stage"]


def stage(**fields: Unpack[StageFields]) -> StageLine:
    return {"version": FORMAT_VERSION, "kind": "stage", "at": now_iso(), **fields}


class StageReusedFields(TypedDict):
    attempt: int
    stage: str
    recorded_by: NotRequired[int | None]  # the attempt whose record was reused
    summary: NotRequired[str | None]  # made afresh from the value handed back, when it differs


class StageReusedLine(_Head, StageReusedFields):
    kind: Literal["stage-reused"]


def stage_reused(**fields: Unpack[StageReusedFields]) -> StageReusedLine:
    return {"version": FORMAT_VERSION, "kind": "stage-reused", "at": now_iso(), **fields}


class StartPointFields(TypedDict):
    attempt: int
    stage: str  # the first stage the attempt runs
    why: str


class StartPointLine(_Head, StartPointFields):
    kind: Literal["start-point"]


def start_point(**fields: Unpack[StartPointFields]) -> StartPointLine:
    return {"version": FORMAT_VERSION, "kind": "start-point", "at": now_iso(), **fields}


class InvalidatedFields(TypedDict):
    attempt: int
    stages: list[str]  # the records no longer current
    start: NotRequired[str]  # the start point that made them so


class InvalidatedLine(_Head, InvalidatedFields):
    kind: Literal["invalidated"]


def invalidated(**fields: Unpack[InvalidatedFields]) -> InvalidatedLine:
    return {"version": FORMAT_VERSION, "kind": "invalidated", "at": now_iso(), **fields}


class LogFields(TypedDict):
    attempt: NotRequired[int]
    message: NotRequired[str]
    stage: NotRequired[str]
    data: NotRequired[dict[str, Any]]  # what wf.log was given besides its message


class LogLine(_Head, LogFields):
    kind: Literal["log"]


def log(**fields: Unpack[LogFields]) -> LogLine:
    return {"version": FORMAT_VERSION, "kind": "log", "at": now_iso(), **fields}


class StatusFields(TypedDict):
    attempt: int
    text: str  # what the workflow says it is doing, shown until the next status or the attempt's end
    progress: NotRequired[float | None]  # how far along, from 0 to 1, when the workflow says
    stage: NotRequired[str]  # the stage it was set in


class StatusLine(_Head, StatusFields):
    kind: Literal["status"]


def status(**fields: Unpack[StatusFields]) -> StatusLine:
    return {"version": FORMAT_VERSION, "kind": "status", "at": now_iso(), **fields}


# --- agents and turns -----------------------------------------------------------------------


class AgentFields(TypedDict):
    attempt: int
    agent: str  # its key
    harness: str
    model: NotRequired[str | None]
    runtime: NotRequired[RuntimeOptions]
    instructions: NotRequired[str | None]
    cwd: NotRequired[str]
    dir: NotRequired[str]  # its folder in the run
    stage: NotRequired[str]
    sandbox: NotRequired[SandboxRecord]  # the profile it runs in; absent when unconfined


class AgentLine(_Head, AgentFields):
    kind: Literal["agent"]


def agent(**fields: Unpack[AgentFields]) -> AgentLine:
    return {"version": FORMAT_VERSION, "kind": "agent", "at": now_iso(), **fields}


class AgentProcessFields(TypedDict):
    attempt: int
    agent: str
    pid: int  # leader of its own process group
    process_start: NotRequired[str | None]
    command: NotRequired[list[str]]
    turn: NotRequired[int | None]
    stage: NotRequired[str]


class AgentProcessLine(_Head, AgentProcessFields):
    kind: Literal["agent-process"]


def agent_process(**fields: Unpack[AgentProcessFields]) -> AgentProcessLine:
    return {"version": FORMAT_VERSION, "kind": "agent-process", "at": now_iso(), **fields}


class PaneFields(TypedDict):
    attempt: int
    agent: str
    multiplexer: str  # tmux
    server: str  # tmux -L SERVER
    workspace: str  # the tmux session named for the attempt
    window: str  # the agent's key
    pid: int  # the program's process
    turn: NotRequired[int | None]
    pane: NotRequired[str]  # the multiplexer's id of the pane
    process_start: NotRequired[str | None]
    command: NotRequired[list[str]]


class PaneLine(_Head, PaneFields):
    kind: Literal["pane"]


def pane(**fields: Unpack[PaneFields]) -> PaneLine:
    return {"version": FORMAT_VERSION, "kind": "pane", "at": now_iso(), **fields}


class TurnStartFields(TypedDict):
    attempt: int
    agent: str
    turn: int
    harness: str
    session: str | None  # the agent's session id; null: not known yet
    session_file: str | None  # the file the agent's program keeps the session in
    session_offset: int  # the byte of that file the turn's use begins at
    stage: NotRequired[str]


class TurnStartLine(_Head, TurnStartFields):
    kind: Literal["turn-start"]


def turn_start(**fields: Unpack[TurnStartFields]) -> TurnStartLine:
    return {"version": FORMAT_VERSION, "kind": "turn-start", "at": now_iso(), **fields}


class SlotWaitFields(TypedDict):
    attempt: int
    agent: str
    turn: int  # the turn that waits: it starts once it has the slot
    harness: str  # the runtime whose slots are all held
    limit: int  # its --max-agents
    held_by: list[str]  # who holds them as the wait began: `fix/12 builder`
    stage: NotRequired[str]


class SlotWaitLine(_Head, SlotWaitFields):
    kind: Literal["slot-wait"]


def slot_wait(**fields: Unpack[SlotWaitFields]) -> SlotWaitLine:
    return {"version": FORMAT_VERSION, "kind": "slot-wait", "at": now_iso(), **fields}


class SessionFields(TypedDict):
    attempt: int
    agent: str
    turn: int
    session: str | None  # the session the turn was found to be in
    session_file: str | None
    session_offset: int
    stage: NotRequired[str]


class SessionLine(_Head, SessionFields):
    kind: Literal["session"]


def session(**fields: Unpack[SessionFields]) -> SessionLine:
    return {"version": FORMAT_VERSION, "kind": "session", "at": now_iso(), **fields}


class TurnFields(TypedDict):
    attempt: int
    agent: str
    turn: int
    outcome: str  # answered, unanswered, blocked, timed-out, failed, cancelled
    stage: NotRequired[str]
    harness: NotRequired[str]
    model: NotRequired[str | None]
    session: NotRequired[str | None]
    label: NotRequired[str | None]
    prompt: NotRequired[str]
    reason: NotRequired[str | None]
    value: NotRequired[Any]  # the answer, plain JSON, when answered
    by: NotRequired[str | None]  # what settled it
    nudged: NotRequired[bool]  # it took the recovery prompt
    started: NotRequired[str]
    ended: NotRequired[str]
    seconds: NotRequired[float]
    usage: NotRequired[dict[str, Any] | None]  # the tokens the program reported
    cost: NotRequired[float | None]  # US dollars; a `usage` line for the turn takes its place
    unreported: NotRequired[bool]  # the next attempt reads its use from the session file


class TurnLine(_Head, TurnFields):
    kind: Literal["turn"]


def turn(**fields: Unpack[TurnFields]) -> TurnLine:
    return {"version": FORMAT_VERSION, "kind": "turn", "at": now_iso(), **fields}


# `from` is a Python keyword: this shape is spelled as a call.
UsageFields = TypedDict(
    "UsageFields",
    {
        "attempt": int,  # the attempt whose turn used it
        "agent": str,
        "turn": int,
        "tokens": dict[str, int] | None,  # null: unknown (see `unknown`)
        "cost": float | None,  # US dollars; null when unknown
        "recovered": bool,  # read from the session by a later attempt
        "stage": NotRequired[str],
        "harness": NotRequired[str],
        "by_attempt": NotRequired[int],  # the attempt that read it
        "cost_unknown": NotRequired[str],  # why the tokens have no price
        "unknown": NotRequired[str],  # why what the turn used cannot be known
        "models": NotRequired[dict[str, Any]],  # tokens and cost by model
        "calls": NotRequired[int],
        "session": NotRequired[str | None],
        "session_file": NotRequired[str | None],
        "from": NotRequired[int],  # the byte of the session file reading began at
        "to": NotRequired[int],  # the byte it ended at
    },
)


class UsageLine(_Head, UsageFields):
    kind: Literal["usage"]


def usage(**fields: Unpack[UsageFields]) -> UsageLine:
    return {"version": FORMAT_VERSION, "kind": "usage", "at": now_iso(), **fields}


# --- events ---------------------------------------------------------------------------------


class TakeFields(TypedDict):
    attempt: int
    wait: str  # {stage}/{kind}:{names}#{occurrence}
    event: str  # the id of the event taken
    name: str
    stage: NotRequired[str | None]


class TakeLine(_Head, TakeFields):
    kind: Literal["take"]


def take(**fields: Unpack[TakeFields]) -> TakeLine:
    return {"version": FORMAT_VERSION, "kind": "take", "at": now_iso(), **fields}


class RaceFields(TypedDict):
    attempt: int
    wait: str
    winner: str  # the branch that won
    event: NotRequired[str | None]  # the event it took, if any
    stage: NotRequired[str | None]


class RaceLine(_Head, RaceFields):
    kind: Literal["race"]


def race(**fields: Unpack[RaceFields]) -> RaceLine:
    return {"version": FORMAT_VERSION, "kind": "race", "at": now_iso(), **fields}


class TimerFields(TypedDict):
    attempt: int
    wait: str
    due: str  # ISO 8601 time it fires
    stage: NotRequired[str | None]


class TimerLine(_Head, TimerFields):
    kind: Literal["timer"]


def timer(**fields: Unpack[TimerFields]) -> TimerLine:
    return {"version": FORMAT_VERSION, "kind": "timer", "at": now_iso(), **fields}


class RedoFields(TypedDict):
    attempt: int
    stage: str  # the --from-stage of a run with events


class RedoLine(_Head, RedoFields):
    kind: Literal["redo"]


def redo(**fields: Unpack[RedoFields]) -> RedoLine:
    return {"version": FORMAT_VERSION, "kind": "redo", "at": now_iso(), **fields}


class RedoReachedFields(TypedDict):
    attempt: int
    stage: str
    redo_attempt: int  # the attempt whose redo this reached
    before_stages: list[str]  # the records reused before it: older than the redo
    before_waits: list[str]  # and the waits replayed before it


class RedoReachedLine(_Head, RedoReachedFields):
    kind: Literal["redo-reached"]


def redo_reached(**fields: Unpack[RedoReachedFields]) -> RedoReachedLine:
    return {"version": FORMAT_VERSION, "kind": "redo-reached", "at": now_iso(), **fields}


# --- all of them ----------------------------------------------------------------------------

Entry = (
    RunLine
    | AttemptStartLine
    | AttemptEndLine
    | QueuedLine
    | UnqueuedLine
    | CancelLine
    | EditedLine
    | ReportLine
    | TornLine
    | StageStartLine
    | StageLine
    | StageReusedLine
    | StartPointLine
    | InvalidatedLine
    | LogLine
    | StatusLine
    | AgentLine
    | AgentProcessLine
    | PaneLine
    | TurnStartLine
    | SlotWaitLine
    | SessionLine
    | TurnLine
    | UsageLine
    | TakeLine
    | RaceLine
    | TimerLine
    | RedoLine
    | RedoReachedLine
)

# Each kind and its shape: what every reader of the log must know of (log_text, replay).
SHAPES: dict[str, type] = {
    "run": RunLine,
    "attempt-start": AttemptStartLine,
    "attempt-end": AttemptEndLine,
    "queued": QueuedLine,
    "unqueued": UnqueuedLine,
    "cancel": CancelLine,
    "edited": EditedLine,
    "report": ReportLine,
    "torn": TornLine,
    "stage-start": StageStartLine,
    "stage": StageLine,
    "stage-reused": StageReusedLine,
    "start-point": StartPointLine,
    "invalidated": InvalidatedLine,
    "log": LogLine,
    "status": StatusLine,
    "agent": AgentLine,
    "agent-process": AgentProcessLine,
    "pane": PaneLine,
    "turn-start": TurnStartLine,
    "slot-wait": SlotWaitLine,
    "session": SessionLine,
    "turn": TurnLine,
    "usage": UsageLine,
    "take": TakeLine,
    "race": RaceLine,
    "timer": TimerLine,
    "redo": RedoLine,
    "redo-reached": RedoReachedLine,
}
KINDS = frozenset(SHAPES)

# Kinds that only report progress: a crash that loses one loses nothing a continue needs, and a
# continue writes one for each of thousands of stages, so they are appended without an fsync.
PROGRESS_KINDS = frozenset({"stage-start", "stage-reused", "log", "status", "agent", "slot-wait"})


def append(path: Path, line: Entry) -> int:
    """Append `line` to the log at `path`, fsynced unless its kind only reports progress; the
    offset it starts at."""
    return append_line(path, line, sync=line["kind"] not in PROGRESS_KINDS)


class ProgressLog:
    """Appends to one log through a descriptor kept open until `close`: a continue writes a
    progress line for each of thousands of reused stages, and opening the file for each costs more
    than writing the line. A line of a kind that is not progress is fsynced all the same."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines = ProgressLines(path)

    def append(self, line: Entry) -> None:
        if line["kind"] in PROGRESS_KINDS:
            self._lines.append(line)
        else:
            append(self.path, line)

    def close(self) -> None:
        self._lines.close()


def attempt_of(entry: Entry) -> int | None:
    """The attempt a line belongs to, for the kinds that belong to one (a run line, a queued
    line or a torn one belongs to none)."""
    attempt = cast(Mapping[str, object], entry).get("attempt")
    return attempt if isinstance(attempt, int) else None
