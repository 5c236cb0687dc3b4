"""The peers: the same trivial steps as DBOS Transact steps on SQLite and as LangGraph tasks with
its SQLite checkpointer.

Each measurement runs in a process of its own (`python -m bench.peers PEER ACTION N DB`), as a
user's program would, and times itself from inside: DBOS is a process-wide singleton, and
neither peer has a command to time from outside the way `awf run` is timed.

- `run`: a workflow of N steps, start to end. Prints {"seconds": …}.
- `crash`: the same workflow, killed (os._exit) just before its last step, as a crash would.
- `resume`: a new process goes on with the crashed workflow the peer's own way (DBOS recovers
  pending workflows when it launches; LangGraph is invoked again on the same thread). Prints
  {"seconds": …} for the time from the workflow's restart to its last step, and {"ran": …}, how
  many of the earlier steps it ran again instead of reusing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from .harness import BenchError, run_timed

PEERS = {
    "dbos": ("DBOS Transact (SQLite)", ["dbos"]),
    "langgraph": ("LangGraph (SqliteSaver)", ["langgraph", "langgraph.checkpoint.sqlite"]),
}
CRASHED = 17  # the exit code of a `crash` process: it died where it was meant to
WORKFLOW_ID = "bench-steps"


def missing(peer: str) -> str | None:
    """Why `peer` cannot be measured here, or None when it can."""
    for module in PEERS[peer][1]:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"{module} is not installed (pip install '.[bench]')"
    return None


def measure(peer: str, action: str, steps: int, db: Path) -> dict[str, Any]:
    """Run one peer process and return what it printed. Raises BenchError when it failed."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    expect = (CRASHED,) if action == "crash" else (0,)
    timed = run_timed(
        [sys.executable, "-m", "bench.peers", peer, action, str(steps), str(db)], cwd=db.parent, env=env, expect=expect
    )
    if action == "crash":
        return {}
    try:
        return json.loads(timed.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        printed = f"{timed.stdout[-300:]!r} {timed.stderr[-300:]!r}"
        raise BenchError(f"{peer} {action} printed no result: {printed}") from None


# What runs inside the peer's process.

_marks: dict[str, float] = {}
_ran: list[int] = []


def _step_value(i: int) -> dict[str, int]:
    _ran.append(i)
    return {"i": i}


def _at_step(i: int, steps: int, crash: bool) -> None:
    if i == steps - 1:
        _marks["last"] = time.perf_counter()
        if crash:
            sys.stdout.flush()
            os._exit(CRASHED)


def _replayed(steps: int) -> dict[str, Any]:
    if "last" not in _marks:
        raise SystemExit("the workflow was not resumed: no crashed workflow was found to go on with")
    seconds = _marks["last"] - _marks["start"]
    return {"seconds": seconds, "reused": steps - 1, "ran": len([i for i in _ran if i < steps - 1])}


def _dbos(action: str, steps: int, db: Path) -> dict[str, Any]:
    from dbos import DBOS, SetWorkflowID

    crash = action == "crash"

    @DBOS.step()
    def step(i: int) -> dict[str, int]:
        return _step_value(i)

    @DBOS.workflow()
    def bench_steps(n: int) -> int:
        _marks["start"] = time.perf_counter()
        for i in range(n):
            _at_step(i, n, crash)
            step(i)
        return n

    DBOS(
        config={
            "name": "awf-bench",
            "system_database_url": f"sqlite:///{db}",
            "log_level": "WARNING",
            "run_admin_server": False,
        }
    )
    try:
        DBOS.launch()  # recovers the crashed workflow, if there is one
        if action == "resume":
            DBOS.retrieve_workflow(WORKFLOW_ID).get_result()
            return _replayed(steps)
        start = time.perf_counter()
        with SetWorkflowID(WORKFLOW_ID):
            bench_steps(steps)
        return {"seconds": time.perf_counter() - start}
    finally:
        DBOS.destroy()


def _langgraph(action: str, steps: int, db: Path) -> dict[str, Any]:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.func import entrypoint, task

    crash = action == "crash"
    connection = sqlite3.connect(str(db), check_same_thread=False)

    @task
    def step(i: int) -> dict[str, int]:
        return _step_value(i)

    @entrypoint(checkpointer=SqliteSaver(connection))
    def bench_steps(n: int) -> int:
        _marks["start"] = time.perf_counter()
        for i in range(n):
            _at_step(i, n, crash)
            step(i).result()
        return n

    config = {"configurable": {"thread_id": WORKFLOW_ID}}
    try:
        # "sync" is LangGraph's most durable mode: each checkpoint is written before the next step.
        if action == "resume":
            bench_steps.invoke(None, config, durability="sync")
            return _replayed(steps)
        start = time.perf_counter()
        bench_steps.invoke(steps, config, durability="sync")
        return {"seconds": time.perf_counter() - start}
    finally:
        connection.close()


def main(argv: list[str]) -> int:
    peer, action, steps, db = argv[0], argv[1], int(argv[2]), Path(argv[3])
    result = {"dbos": _dbos, "langgraph": _langgraph}[peer](action, steps, db)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
