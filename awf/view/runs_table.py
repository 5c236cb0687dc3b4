"""`awf runs` as people read it: a table of runs, and one run in full."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..record import entries
from ..record.clock import parse_iso
from ..record.costs import money
from ..record.detail import RunDetail, ShownWorktree
from ..record.file_kinds import RetryFields, WaitFields
from ..record.summary import RunSummary
from ..record.waiting import crash_loop_text, retry_text
from .log_text import forked_text
from .one_line import first_line
from .one_line import status_text as said_text


def ago(seconds: float | None) -> str:
    """How long ago, as a person says it: `just now`, `40s ago`, `3m ago`, `2h ago`, `5d ago`."""
    if seconds is None:
        return "-"
    if seconds < 1:
        return "just now"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


def when(text: str | None) -> str:
    """A recorded time in local time, to the minute."""
    if not text:
        return "-"
    try:
        return datetime.fromtimestamp(parse_iso(text)).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return text


def columns(headers: list[str], rows: list[list[Any]]) -> str:
    """Plain, left-aligned columns two spaces apart. (tabulate takes longer than reading 10,000
    runs to lay out their table; this takes a tenth of it.) A cell of several lines shows its first."""
    table = [headers, *([first_line(str(cell)) for cell in row] for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    last = len(headers) - 1
    return "\n".join(
        "  ".join(cell if i == last else cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in table
    )


def _status(summary: RunSummary) -> str:
    """A parked run says on what: `parked: ci`, `parked: approved or 12:00`; then the events that
    wait untaken (`· 2 queued`), or that wakes gave up on a run that keeps crashing."""
    text = status_text(
        summary.status,
        summary.waiting,
        summary.queued,
        summary.crash_looping,
        summary.workflow,
        summary.id,
        retry=summary.retry,
    )
    if summary.place is not None:
        text += f", place {summary.place}"
    if summary.slot is not None:
        text += f", {summary.slot}"
    if summary.wf_status is not None:
        text += " · " + said_text(summary.wf_status["text"], summary.wf_status["progress"])
    return f"{text} · {forked_text(summary.forked_from)}" if summary.forked_from else text


def status_text(
    status: str,
    waits: list[WaitFields] | None,
    queued: int | None,
    crashes: int | None,
    workflow: str,
    run_id: str,
    *,
    retry: RetryFields | None = None,
) -> str:
    # A redo that stopped rather than park on its way still waits: a wake goes on with it.
    text = (f"{status}: " if status == "parked" else f"{status}, wakes on ") + waits_text(waits) if waits else status
    if retry is not None and status == "stopped":
        text += ", " + retry_text(retry)
    if queued:
        text += f" · {queued} queued"
    if crashes:
        text += f" · {crash_loop_text(f'{workflow}/{run_id}', crashes)}"
    return text


def waits_text(waits: Iterable[WaitFields], now: float | None = None) -> str:
    """What a parked run waits for: the names, then the due times (the time of day alone if it is today's)."""
    waits = list(waits)
    names = sorted({name for wait in waits for name in wait.get("names") or []})
    today = datetime.fromtimestamp(time.time() if now is None else now).strftime("%Y-%m-%d")
    dues = sorted(when(due) for wait in waits if (due := wait.get("due")))
    return " or ".join(names + [due.removeprefix(today + " ") for due in dues]) or "nothing"


def listing(summaries: Iterable[RunSummary], now: float | None = None, left: dict[str, int] | None = None) -> str:
    """`left`: how many agents each interrupted run's crashed attempts left running, by run name."""
    now = time.time() if now is None else now
    summaries = list(summaries)
    branches = any(s.branch for s in summaries)  # the column only where a run has a worktree
    rows = [
        [
            s.workflow,
            s.id,
            _status(s) + _left((left or {}).get(f"{s.workflow}/{s.id}", 0)),
            s.stage or "-",
            s.attempts,
            when(s.started),
            ago(now - s.moved),
            money(s.cost, s.cost_unknown),
            *([s.branch or "-"] if branches else []),
        ]
        for s in summaries
    ]
    headers = ["workflow", "id", "status", "stage", "attempts", "started", "moved", "cost"]
    return columns([*headers, *(["branch"] if branches else [])], rows)


def _worktree_lines(worktree: ShownWorktree | None) -> list[str]:
    if not worktree:
        return []
    state = {True: "uncommitted changes", False: "no uncommitted changes", None: "changes not known"}
    there = state[worktree["changes"]] if worktree["exists"] else "removed (a continue makes it again)"
    base = str(worktree["base"])[:12]
    return [
        f"  worktree: {worktree['path']} ({there})",
        f"  branch:   {worktree['branch']} from {worktree['base_ref']} ({base}): git log {base}..{worktree['branch']}",
    ]


def _forked_lines(forked: entries.ForkedFromFields | None) -> list[str]:
    return [f"  forked:   {forked_text(forked).removeprefix('forked ')}"] if forked else []


def _left(count: int) -> str:
    return f", {count} agent{'s' if count > 1 else ''} left running" if count else ""


def detail(run: RunDetail, now: float | None = None, left: list[str] | None = None) -> str:
    """One run: its input, each attempt, each current stage record, and the command that goes on.

    `left`: the agents crashed attempts left that still run, each a line."""
    now = time.time() if now is None else now
    data = run.as_json()
    status = status_text(
        data["status"],
        data["waiting"],
        data["queued"],
        data["crash_looping"],
        data["workflow"],
        data["id"],
        retry=data["retry"],
    )
    if data.get("wf_status"):
        status += " · " + said_text(data["wf_status"]["text"], data["wf_status"]["progress"])
    head = f"{data['workflow']}/{data['id']}  {status}"
    last = run.history.last
    between = last is not None and last.end is not None and not last.end.get("stage") and last.end.get("after")
    if data["stage"] and data["status"] != "completed":
        head += f" between stages, after {data['stage']}" if between else f" in {data['stage']}"
    lines = [
        head,
        f"  argv:     {json.dumps(data['argv'], ensure_ascii=False)}",
        f"  cwd:      {data['cwd']}",
        f"  sandbox:  {_sandbox(data.get('sandbox'))}",
        *_worktree_lines(data.get("worktree")),
        *_forked_lines(data.get("forked_from")),
        f"  file:     {data['file'] or '-'}",
        f"  started:  {when(data['started'])}, last moved {ago(now - run.moved)}",
        f"  cost:     {money(data['cost'], data['cost_unknown'])}",
        f"  record:   {data['record']}",
    ]
    if data["report"]:
        lines.append(f"  report:   {data['report']}")
    lines += ["", "attempts"]
    attempt_rows = [
        [
            a["attempt"],
            a["status"],
            a["stage"] or "-",
            _flags(a["flags"]) or "-",
            a["pid"] or "-",
            when(a["started"]),
            money(a["cost"], a["cost_unknown"]),
            a["reason"] or "",
        ]
        for a in data["attempts"]
    ]
    lines += _indent(columns(["#", "status", "stage", "flags", "pid", "started", "cost", "reason"], attempt_rows))
    if data["costs"]:
        lines += ["", "cost"]
        cost_rows = [
            [
                row["attempt"],
                row["stage"] or "(between stages)",
                row["agent"],
                row["turns"],
                money(row["cost"], row["unknown"]),
                "recovered: read from its session by a later attempt" if row["recovered"] else "",
            ]
            for row in data["costs"]
        ]
        lines += _indent(columns(["attempt", "stage", "agent", "turns", "cost", ""], cost_rows))
    if left:
        lines += [
            "",
            f"left running (a continue is refused until they end, or given --end-leftovers; "
            f"awf cancel {run.paths.name} ends them)",
        ]
        lines += [f"  {line}" for line in left]
    lines += ["", "stages"]
    if run.stages:
        stage_rows = []
        for name in run.stages:
            item = run.stage_json(name)
            if "problem" in item:
                stage_rows.append([name, "unreadable", "-", "-", item["problem"]])
                continue
            seconds = item["age"]
            said = item["summary"] if item["outcome"] == "succeeded" else item["reason"]
            outcome = f"{item['outcome']}, edited" if item.get("edited") else item["outcome"]
            if item.get("stale"):
                outcome += ", stale"
            stage_rows.append([name, outcome, item["attempt"], ago(seconds), said or ""])
        lines += _indent(columns(["stage", "outcome", "attempt", "age", "summary"], stage_rows))
        stale = [name for name in run.stages if name in run.stale]
        if stale:
            why = run.stale[stale[0]]
            lines.append(f"  stale ({why}; each runs again when the workflow reaches it): {', '.join(stale)}")
    else:
        lines.append("  (no stage recorded)")
    if data["go_on"]:
        lines += ["", f"go on: {data['go_on']}"]
    return "\n".join(lines)


def _flags(flags: dict[str, Any]) -> str:
    words = []
    for key, value in flags.items():
        option = "--" + key.replace("_", "-")
        for one in value if isinstance(value, list) else [value]:  # a repeatable flag, once a value
            words.append(option if one is True else f"{option} {one}")
    return " ".join(words)


def _indent(text: str) -> list[str]:
    return ["  " + line.rstrip() for line in text.splitlines()]


def _sandbox(record: Any) -> str:
    """The run's sandbox as one line: its profile, and what it lets agents write and reach."""
    if not isinstance(record, dict):
        return "none"
    write = ", ".join(record.get("write") or []) or "nothing but their own folders"
    reach = ", ".join(record.get("network") or []) or "only their model"
    return f"{record.get('profile')} (write {write}; reach {reach})"
