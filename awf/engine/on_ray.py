"""`awf run --on ray`: an attempt placed on a Ray cluster, as an ordinary `awf run` process.

Nothing about a run lives only in Ray. The run is made (or checked) here; a `queued` line in
its run.jsonl says an attempt waits for a node; a detached Ray actor, created on whichever node
Ray picks, runs `awf run FILE --id ID --continue` in the run's folder there, on storage every
node mounts at the same path. The attempt writes the same files as on one machine, and its
attempt lock stays the one guard against a second attempt, whichever node holds it. The actor
is detached, so the attempt goes on after the command that placed it returns; it holds the
resources it was placed with until the attempt ends, then ends itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..record import entries, folder
from ..record.layout import RunPaths
from .continue_command import continue_words
from .errors import Refusal
from .placement import PLACED_ENV
from .request import RunRequest
from .self_command import awf_command

NAMESPACE = "awf"
OUTPUT = "placed.log"  # what the placed attempts printed, appended, in the run's folder
# Variables that describe the placing shell, not the attempt: the node's own stand.
_NOT_CARRIED = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "TERM", "TMUX", "TMUX_PANE", "RAY_ADDRESS"})


@dataclass
class Placement:
    """Where and how to place the attempt: `--ray-address` and `--ray-resources`."""

    address: str | None = None  # None: RAY_ADDRESS, else a cluster started on this machine
    resources: dict[str, float] = field(default_factory=dict)


@dataclass
class Placed:
    """An attempt handed to Ray."""

    paths: RunPaths
    token: str  # names the placement in the `queued` line, and the actor
    resources: dict[str, float]


def parse_resources(text: str | None) -> dict[str, float]:
    """`--ray-resources '{"agents": 1}'`: resource names and amounts, as Ray takes them."""
    if not text:
        return {}
    try:
        given = json.loads(text)
    except json.JSONDecodeError as error:
        raise Refusal(
            f"--ray-resources is not JSON ({error.msg}); give an object such as '{{\"agents\": 1}}'"
        ) from None
    if not isinstance(given, dict) or not all(
        isinstance(name, str) and isinstance(amount, int | float) and not isinstance(amount, bool) and amount >= 0
        for name, amount in given.items()
    ):
        raise Refusal("--ray-resources must be a JSON object of resource names and amounts, such as '{\"agents\": 1}'")
    return {name: float(amount) for name, amount in given.items()}


def place(request: RunRequest, placement: Placement) -> Placed:
    """Ready the run, connect to the cluster and place the attempt. Raises Refusal or MissingPackage."""
    from .claim import prepare_elsewhere

    ray = _ray()
    paths, cwd = prepare_elsewhere(request)
    check_locks_exclude(paths)
    _connect(ray, placement.address)
    token = os.urandom(6).hex()
    entries.append(
        paths.log, entries.queued(on="ray", token=token, by=socket.gethostname(), resources=placement.resources)
    )
    try:
        _runner(ray).options(
            name=f"awf {paths.name} {token}",
            namespace=NAMESPACE,
            lifetime="detached",
            num_cpus=placement.resources.get("CPU", 0),
            num_gpus=placement.resources.get("GPU", 0),
            resources={name: amount for name, amount in placement.resources.items() if name not in ("CPU", "GPU")},
        ).remote(_attempt_command(request, paths), str(cwd), _carried_env(), str(paths.dir), token)
    except Exception as error:
        entries.append(paths.log, entries.unqueued(token=token, reason=f"Ray did not take the attempt: {error}"))
        raise Refusal(f"Ray did not take the attempt of {paths.name}: {error}") from None
    finally:
        # The record tells the rest; a connection kept open would print the cluster's news on stdout.
        ray.shutdown()
    return Placed(paths, token, placement.resources)


def where_it_started(placed: Placed, within: float) -> entries.AttemptStartLine | None:
    """The `attempt-start` line of the placed attempt, once it began (waiting up to `within`
    seconds); None while it still waits for a node. Raises Refusal when it will not start."""
    deadline = time.monotonic() + within
    while True:
        line = _placement_state(placed.paths, placed.token)[1]
        if line is not None and line["kind"] == "attempt-start":
            return line
        if line is not None and line["kind"] == "unqueued":
            raise Refusal(f"the attempt of {placed.paths.name} did not start: {line['reason']}")
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.2)


def wait_for_ending(
    placed: Placed, started: entries.AttemptStartLine | None
) -> tuple[int, entries.AttemptEndLine | None]:
    """Follow the placed attempt to its ending: its exit code and its `attempt-end` line; for an
    attempt whose node was lost (no ending, its lock free), exit 1 and None.

    It polls: a change another machine makes to shared storage raises no file event here.
    """
    started = started or where_it_started(placed, within=float("inf"))
    assert started is not None
    number = started["attempt"]
    while True:
        history = folder.read_history(placed.paths)
        attempt = next((a for a in history.attempts if a.number == number), None)
        if attempt is not None and attempt.end is not None:
            return int(attempt.end.get("exit_code", 1)), attempt.end
        if attempt is not None and not attempt.is_live():
            return 1, None
        time.sleep(0.5)


def check_locks_exclude(paths: RunPaths) -> None:
    """Refuse a run root whose file locks do not keep a second process out: the attempt lock is
    the one guard against two attempts of a run on two nodes."""
    from filelock import FileLock

    probe = paths.root / ".lock-check.lock"
    with FileLock(str(probe), mode=0o600):
        taken = subprocess.run(
            [sys.executable, "-c", _PROBE, str(probe)], capture_output=True, text=True, timeout=60, check=False
        )
    if taken.returncode != 3:
        raise Refusal(
            f"the run root {paths.root} is on a filesystem whose locks do not keep a second process out "
            "(a lock held here could be taken again); keep runs on NFSv4, CephFS or a local disk (docs/cluster.md)"
        )


_PROBE = """
import sys
from filelock import FileLock, Timeout
try:
    FileLock(sys.argv[1], timeout=0).acquire()
except Timeout:
    sys.exit(3)
"""


def require_ray() -> None:
    """Refuse `--on ray` up front when Ray is not installed."""
    _ray()


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise Refusal("--on ray needs Ray, which is not installed: pip install 'awf[ray]'") from None
    return ray


def _connect(ray: Any, address: str | None) -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        ray.init(
            address=address or os.environ.get("RAY_ADDRESS") or "auto",
            namespace=NAMESPACE,
            log_to_driver=False,
            logging_level="ERROR",
            configure_logging=False,
        )
    except Exception as error:
        where = address or os.environ.get("RAY_ADDRESS") or "a cluster started on this machine (ray start)"
        raise Refusal(f"cannot reach the Ray cluster at {where}: {error}; give --ray-address or RAY_ADDRESS") from None


def _attempt_command(request: RunRequest, paths: RunPaths) -> list[str]:
    """The `awf run` the node runs: a continue of the run this command made or checked."""
    return [*awf_command(), *continue_words(request, paths)]


def _carried_env() -> dict[str, str]:
    """The attempt gets the placing shell's environment (its agents' credentials among it)."""
    return {name: value for name, value in os.environ.items() if name not in _NOT_CARRIED}


def _placement_state(paths: RunPaths, token: str) -> tuple[str, entries.UnqueuedLine | entries.AttemptStartLine | None]:
    """queued, started (with its attempt-start line) or withdrawn (with its unqueued line)."""
    from ..record.log import read_lines

    seen = False
    for line in read_lines(paths.log, kinds=frozenset({"queued", "unqueued", "attempt-start"})):
        entry = line.entry
        if entry["kind"] == "queued":
            seen = seen or entry.get("token") == token
        elif not seen:
            continue
        elif entry["kind"] == "unqueued" and entry.get("token") == token:
            return "withdrawn", entry
        elif entry["kind"] == "attempt-start" and (placed := entry.get("placed")) and placed.get("token") == token:
            return "started", entry
    return "queued", None


def _runner(ray: Any) -> Any:
    return ray.remote(max_restarts=0)(AttemptRunner)


class AttemptRunner:
    """The Ray actor that makes one placed attempt: it runs `awf run --continue` on its node and
    ends itself when the attempt ends, giving back the resources it was placed with.

    The work is in the constructor's thread: a detached actor's creation belongs to the cluster,
    not to the command that placed it, so the attempt goes on when that command returns.
    """

    def __init__(self, command: list[str], cwd: str, env: dict[str, str], run_dir: str, token: str) -> None:
        thread = threading.Thread(target=_run_placed, args=(command, cwd, env, run_dir, token), daemon=True)
        thread.start()


def _run_placed(command: list[str], cwd: str, env: dict[str, str], run_dir: str, token: str) -> None:
    import ray

    code = 1
    try:
        paths = _paths_of(Path(run_dir))
        state, _ = _placement_state(paths, token)
        if state != "queued":
            return  # withdrawn (awf cancel) while it waited for a node: start nothing
        node = ray.get_runtime_context().get_node_id()
        env = {**env, PLACED_ENV: json.dumps({"on": "ray", "node": node, "token": token})}
        with open(paths.dir / OUTPUT, "ab") as output:
            child = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                preexec_fn=_end_with_parent,
            )
        _watch_for_cancel(child, paths)
        code = child.returncode
        if _placement_state(paths, token)[0] == "queued":
            entries.append(
                paths.log,
                entries.unqueued(
                    token=token,
                    reason=f"awf run exited {code} before the attempt began; its words are in {OUTPUT}",
                ),
            )
    finally:
        os._exit(0 if code == 0 else 1)  # the actor's end gives its resources back to the cluster


def _paths_of(run_dir: Path) -> RunPaths:
    return RunPaths(run_dir.parent.parent, run_dir.parent.name, run_dir.name)


def _watch_for_cancel(child: subprocess.Popen[bytes], paths: RunPaths) -> None:
    """Wait for the attempt, passing on an `awf cancel` from another machine as SIGTERM."""
    from ..record.log import read_lines

    offset = paths.log.stat().st_size
    while child.poll() is None:
        try:
            child.wait(0.5)
            break
        except subprocess.TimeoutExpired:
            pass
        size = paths.log.stat().st_size
        if size == offset:
            continue
        for line in read_lines(paths.log, start=offset, validate=False, kinds=frozenset({"cancel"})):
            asked = line.entry
            if line.kind == "cancel" and asked.get("pid") == child.pid and not asked.get("sent"):
                child.send_signal(signal.SIGTERM)
        offset = size


def _end_with_parent() -> None:
    """The attempt dies with the actor's worker, as it would with its node: SIGKILL, no ending."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
