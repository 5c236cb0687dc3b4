"""`awf logs` of a run with events: each send is an entry of its own, among the log's entries in time order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from conftest import AWF, Project
from test_events import MERGE, wait_attempt_end

from awf.record.schemas import validator


def merged(project: Project) -> Project:
    project.write("merge.py", MERGE.replace("{remind}", "1h"))
    assert project.awf("run", "merge.py", "--id", "m1").code == 0
    assert project.awf("send", "merge/m1", "note", "--data", '"first"', "--event-id", "n-1", "--no-wake").code == 0
    assert project.awf("send", "merge/m1", "ci", "--data", '{"passed": true}', "--event-id", "ci-1").code == 0
    assert wait_attempt_end(project, 2)["outcome"] == "parked"
    return project


def json_items(project: Project, *args: str) -> list[dict]:
    result = project.awf("logs", "merge/m1", "--json", *args)
    assert result.code == 0, result.stderr
    items = [json.loads(line) for line in result.stdout.splitlines()]
    for item in items:
        validator("logs")(item)
    return items


def test_each_send_is_an_entry_of_its_own_in_time_order_with_a_cursor_of_its_own(project: Project):
    merged(project)
    text = project.awf("logs", "merge/m1").stdout.splitlines()
    sends = [line for line in text if "sent event" in line]
    assert [line.split()[0] for line in sends] == ["e0", sends[1].split()[0]] and sends[1].split()[0].startswith("e")
    assert sends[0].endswith('sent event note (n-1): "first"')
    assert sends[1].endswith('sent event ci (ci-1): {"passed": true}')
    order = [next(i for i, line in enumerate(text) if word in line) for word in ("parked", "ci (ci-1)", "attempt 2")]
    assert order == sorted(order)  # parked, then the send, then the attempt it woke

    items = json_items(project)
    kinds = [item["event"]["name"] if "event" in item else item["entry"]["kind"] for item in items]
    assert kinds.index("ci") < kinds.index("take") and kinds.index("note") < kinds.index("ci")
    inbox = (project.run_dir("merge", "m1") / "events.jsonl").read_bytes()
    for item in items:
        if "event" in item:
            offset = int(item["cursor"][1:])
            assert json.loads(inbox[offset:].split(b"\n")[0]) == item["event"]
    times = [item["event"]["sent"] if "event" in item else item["entry"]["at"] for item in items]
    assert times == sorted(times)


def test_after_a_cursor_shows_the_sends_and_entries_that_came_after_it(project: Project):
    merged(project)
    items = json_items(project)
    cursors = [str(item["cursor"]) for item in items]
    for index in (0, kinds_index(items, "note"), kinds_index(items, "ci"), len(items) - 1):
        later = json_items(project, "--after", cursors[index])
        assert [str(item["cursor"]) for item in later] == cursors[index + 1 :]
    assert project.awf("logs", "merge/m1", "--after", cursors[-1]).stdout == ""


def kinds_index(items: list[dict], name: str) -> int:
    return next(i for i, item in enumerate(items) if item.get("event", {}).get("name") == name)


def test_a_send_cursor_that_does_not_fit_and_a_filter_that_picks_entries(project: Project):
    merged(project)
    for cursor in ("e1", "e", "e99999", "ex"):
        result = project.awf("logs", "merge/m1", "--after", cursor)
        assert result.code == 1 and result.stdout == ""
        assert f"awf: cursor '{cursor}' does not fit run merge/m1: a send's cursor" in result.stderr
    # A send belongs to no attempt, stage or agent: a filter shows the log's entries alone.
    assert "sent event" not in project.awf("logs", "merge/m1", "--attempt", "2").stdout


def test_follow_prints_a_send_as_it_comes(project: Project):
    project.write("merge.py", MERGE.replace("{remind}", "1h"))
    (project.path / "hang-open").touch()
    attempt = project.start("run", "merge.py", "--id", "m1")
    project.wait_for(project.path / "in-open")
    follow = subprocess.Popen(
        [*AWF, "logs", "merge/m1", "--follow"], cwd=project.path, env=project.env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert follow.stdout is not None
        seen = ""
        while "▸ open" not in seen:  # it follows the live attempt
            seen += follow.stdout.readline()
        sent = project.awf("send", "merge/m1", "ci", "--data", '{"passed": true}', "--event-id", "ci-live")
        assert sent.code == 0 and "it takes the event when it reaches its wait" in sent.stderr
        deadline = time.monotonic() + 30
        while "sent event ci (ci-live)" not in seen:
            assert time.monotonic() < deadline, seen
            seen += follow.stdout.readline()
    finally:
        os.killpg(attempt.pid, signal.SIGKILL)
        attempt.communicate(timeout=10)
        follow.wait(timeout=30)
