"""opencode's session store, read for what its model calls used.

opencode keeps every session in one SQLite database, `opencode/opencode.db` under its data folder
($XDG_DATA_HOME, else ~/.local/share; OPENCODE_DB names another file). Its `message` table holds
each message of a session as JSON: a reply of the model (`role` "assistant") has its `modelID`,
its `providerID`, its `tokens` (`input` counts only the prompt tokens not read from a cache:
`cache.read` and `cache.write` are apart), the `cost` opencode priced it at from its catalog of
models, and `time.completed` once the reply is whole, with why it ended (`finish`: "stop" when
the model's turn is over, "tool-calls" when it asked for a tool).

awf reads it read-only, with the database's own lock: opencode writes it at the same time.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...record.files import is_file
from ..usage import whole


def database(env: Mapping[str, str]) -> Path:
    """Where opencode keeps its sessions."""
    named = env.get("OPENCODE_DB")
    if named:
        return Path(named).expanduser()
    return data_dir(env) / "opencode.db"


def data_dir(env: Mapping[str, str]) -> Path:
    """opencode's data folder: its database, its logins (auth.json), its log."""
    data = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return Path(data).expanduser() / "opencode"


@dataclass(frozen=True)
class Reply:
    """One reply of the model in a session, as opencode recorded it."""

    id: str
    created: int  # milliseconds since the epoch
    model: str
    provider: str
    tokens: dict[str, int]  # awf's kinds: input counts the cached prompt too
    cost: float
    completed: bool
    finish: str | None
    error: str | None  # why the call failed, in opencode's words; None: it did not


def tokens_of(given: Mapping[str, Any]) -> dict[str, int]:
    """awf's token kinds from opencode's: every prompt token in `input`, thinking in `output`."""
    cache = mapping(given.get("cache"))
    cached, written, reasoning = whole(cache.get("read")), whole(cache.get("write")), whole(given.get("reasoning"))
    return {
        "input": whole(given.get("input")) + cached + written,
        "cached": cached,
        "cache_write": written,
        "output": whole(given.get("output")) + reasoning,
        "reasoning": reasoning,
    }


def replies(db: Path, session_id: str, since: int = 0) -> list[Reply]:
    """The model's replies in session `session_id` begun at or after `since` (ms), oldest first;
    none while the database or the session is not there. Raises sqlite3.Error when the file is
    not opencode's database."""
    rows = _query(
        db,
        "select id, time_created, data from message where session_id = ? and time_created >= ? "
        "order by time_created, id",
        (session_id, since),
    )
    found = []
    for key, created, data in rows:
        try:
            message = json.loads(data)
        except ValueError:
            continue
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        time = mapping(message.get("time"))
        cost = message.get("cost")
        found.append(
            Reply(
                id=str(key),
                created=int(created),
                model=str(message.get("modelID") or ""),
                provider=str(message.get("providerID") or ""),
                tokens=tokens_of(mapping(message.get("tokens"))),
                cost=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0,
                completed=bool(time.get("completed")),
                finish=message.get("finish") if isinstance(message.get("finish"), str) else None,
                error=_error(message.get("error")),
            )
        )
    return found


def session_started(db: Path, cwd: Path, since: int) -> str | None:
    """The session a prompt typed at or after `since` (ms) went to: of the sessions given a
    prompt since then, the newest one of the folder `cwd` (opencode may record the folder its
    project begins at, above `cwd`), else the newest. None while there is none."""
    rows = _query(
        db,
        "select m.session_id, s.directory from message m join session s on s.id = m.session_id "
        'where m.time_created >= ? and m.data like \'%"role":"user"%\' order by m.time_created desc',
        (since,),
    )
    folders = {cwd, *cwd.parents}
    mine = [key for key, directory in rows if directory and Path(directory) in folders]
    return str(mine[0]) if mine else (str(rows[0][0]) if rows else None)


def _query(db: Path, sql: str, arguments: tuple[Any, ...]) -> list[Any]:
    """The rows of a read-only query; none while the database is not there."""
    # Checked without following a link, then opened by the same path: SQLite follows links itself.
    if not is_file(db):
        return []
    connection = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        return connection.execute(sql, arguments).fetchall()
    finally:
        connection.close()


def _error(error: Any) -> str | None:
    """A failed call's error as opencode words it: its message, and the HTTP status it had."""
    if not isinstance(error, dict):
        return None
    data = mapping(error.get("data"))
    said = str(data.get("message") or error.get("name") or "the call failed").strip()
    status = data.get("statusCode")
    return f"{said} (HTTP {status})" if isinstance(status, int) else said


def mapping(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: a field opencode may leave out."""
    return value if isinstance(value, dict) else {}
