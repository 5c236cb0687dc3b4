"""What awf reads of opencode's own files while a delivery runs: which replies in its database are
the delivery's, and when its log shows it retrying a call.

Both are races end to end (a recovery prompt pasted within a second of the reply that made it
needed; a refused call logged seconds before opencode reports it, on a loaded machine), so they
are held here on files in opencode's layout.

opencode stamps its messages with its own clock, so awf takes as a delivery's any reply begun up
to a second before the paste; the replies the session already had are never among them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

from awf.agents.harness import Message, Session
from awf.agents.harnesses.opencode import OpencodeHarness, _Retries


def _database(home: Path) -> Path:
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as connection:
        connection.execute("create table session (id text primary key, directory text)")
        connection.execute("create table message (id text primary key, session_id text, time_created int, data text)")
        connection.execute("insert into session values ('ses_1', ?)", (str(home),))
    return db


def _reply(db: Path, key: str, *, finish: str, at_ms: int) -> None:
    data = {
        "role": "assistant",
        "modelID": "claude-sonnet-4-5",
        "providerID": "anthropic",
        "tokens": {"input": 10, "output": 5},
        "cost": 0.001,
        "time": {"created": at_ms, "completed": at_ms + 50},
        "finish": finish,
    }
    with sqlite3.connect(db) as connection:
        connection.execute("insert into message values (?, 'ses_1', ?, ?)", (key, at_ms, json.dumps(data)))


def _delivery(home: Path, delivery: int, turn: int = 1) -> tuple[Session, Message]:
    session = Session(
        key="planner",
        runtime={"harness": "opencode", "placement": "pane"},
        instructions=None,
        cwd=home,
        dir=home,
        spawn_process=lambda *args, **kwargs: None,
        id="ses_1",
    )
    message = Message(
        text="You have not answered.",
        turn=turn,
        delivery=delivery,
        original="Plan a fix.",
        dir=home,
        env={"HOME": str(home)},
        deadline=None,
    )
    return session, message


def test_the_recovery_prompt_waits_for_its_own_reply_not_the_one_that_made_it_needed(tmp_path: Path) -> None:
    db = _database(tmp_path)
    now = int(time.time() * 1000)
    session, message = _delivery(tmp_path, delivery=1)
    prompt = OpencodeHarness().pane_watch(session, message)
    _reply(db, "msg_1", finish="stop", at_ms=now)  # it stopped without answering
    assert prompt() is not None

    finished = OpencodeHarness().pane_watch(session, replace(message, delivery=2))
    assert finished() is None  # the model has not replied to the recovery prompt yet

    _reply(db, "msg_2", finish="stop", at_ms=now + 100)
    stopped = finished()
    assert stopped is not None and stopped.failed is None
    assert stopped.cost == 0.001  # this delivery's reply alone
    assert stopped.usage is not None and stopped.usage["output"] == 10  # the turn's two replies


def test_the_next_turn_counts_only_its_own_replies(tmp_path: Path) -> None:
    db = _database(tmp_path)
    now = int(time.time() * 1000)
    _reply(db, "msg_1", finish="stop", at_ms=now - 200)  # the end of turn 1, just before turn 2's paste
    session, message = _delivery(tmp_path, delivery=1, turn=2)
    finished = OpencodeHarness().pane_watch(session, message)
    _reply(db, "msg_2", finish="stop", at_ms=now + 100)

    stopped = finished()
    assert stopped is not None and stopped.usage is not None
    assert (stopped.usage["input"], stopped.usage["output"], stopped.cost) == (10, 5, 0.001)


def _stream_error(log: Path, said: str) -> None:
    line = (
        'timestamp=2026-12-02T02:01:37.042Z level=ERROR message="stream error" providerID=anthropic '
        f'session.id=ses_1 small=false agent=build error.error="{said}"\n'
    )
    with log.open("a") as handle:
        handle.write(line)


def test_a_call_opencode_does_not_retry_is_left_to_it_to_report(tmp_path: Path) -> None:
    log = tmp_path / "1.stderr.txt"
    retries = _Retries(log, limit=0.05)
    _stream_error(log, "AI_APICallError: invalid x-api-key")
    assert retries(None, "ses_1") is None
    time.sleep(0.1)

    assert retries(None, "ses_1") is None  # one failed call, past the limit: opencode reports it itself

    _stream_error(log, "AI_APICallError: the fake model broke")  # it retried: the time ran from the first
    reason = retries(None, "ses_1")
    assert reason is not None and reason.startswith("opencode cannot get an answer from its model")
    assert reason.endswith("(opencode said: AI_APICallError: the fake model broke)")
