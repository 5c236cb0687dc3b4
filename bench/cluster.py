"""Runs placed on Ray: what `--on ray` adds to a run, beside the same run made by local `awf run`.

A one-node Ray cluster is started on this machine, inside a network namespace of its own with
only loopback up (`unshare -n`), so Ray, which advertises the machine's address, reaches no
other; the measurement runs in that namespace, in a child of this process, and hands its
samples back as JSON. Each run is the generated workflow with three trivial stages.

- Local: `awf run` of a new run, one at a time (the baseline).
- Placed, waited for: `awf run --on ray --wait`, one at a time: the latency one run pays.
- Placed at once: RUNS placings (four commands at a time, each returning once its attempt is
  placed), then until every run has completed; the figure is that wall time per run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .harness import BenchError, Figure, run_timed
from .session import Session

FAMILY = "cluster"
STAGES = 3
PORT = 6390
PLACERS = 4  # placing commands at once


def figures(session: Session) -> list[Figure]:
    local = Figure("cluster-local", FAMILY, f"local awf run, {STAGES} stages, per run", short="local run")
    waited = Figure(
        "cluster-waited", FAMILY, "awf run --on ray --wait, per run", baseline="cluster-local", short="placed run"
    )
    burst = Figure("cluster-burst", FAMILY, "", baseline="cluster-local")
    why = _missing()
    if why:
        return [Figure("cluster", FAMILY, "runs placed on Ray", skipped=why)]
    count = session.config.placed
    burst.label = f"{count} runs placed at once, until all completed, per run"
    work = session.scratch("cluster")
    inside = [sys.executable, "-m", "bench.cluster", str(session.workflow_file), str(work), str(count)]
    inside += [str(session.config.repeats)]
    isolate = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    done = subprocess.run(
        [*isolate, *inside],
        cwd=Path(__file__).resolve().parent.parent,
        env=session.env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    session.discard(work)
    if done.returncode != 0:
        raise BenchError(f"the cluster measurement exited {done.returncode}: {done.stderr.strip()[-600:]}")
    samples = json.loads(done.stdout)
    local.samples, waited.samples, burst.samples = samples["local"], samples["waited"], samples["burst"]
    return [local, waited, burst]


def _missing() -> str | None:
    try:
        import ray  # noqa: F401
    except ImportError:
        return "Ray is not installed: pip install -e '.[ray]'"
    if not shutil.which("unshare") or not shutil.which("ip"):
        return "needs unshare (util-linux) and ip (iproute2) for a network namespace of its own"
    return None


def measure(workflow: Path, work: Path, count: int, repeats: int) -> dict[str, list[float]]:
    """Inside the namespace: start the node, take the samples, stop the node."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    env = {
        **os.environ,
        "RAY_ADDRESS": f"127.0.0.1:{PORT}",
        "RAY_USAGE_STATS_ENABLED": "0",
        "NO_COLOR": "1",
    }
    ray = Path(sys.executable).with_name("ray")
    # Ray's unix sockets live under its temp folder, and a socket's path is at most 107 bytes.
    temp = Path(tempfile.mkdtemp(prefix="awf-ray-"))
    said = (work / "ray-start.log").open("wb")
    node = subprocess.Popen(
        [
            str(ray),
            "start",
            "--head",
            "--block",
            f"--port={PORT}",
            "--node-ip-address=127.0.0.1",
            "--include-dashboard=false",
            "--disable-usage-stats",
            "--object-store-memory=80000000",
            f"--temp-dir={temp}",
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=said,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_for_node(ray, env, node, work / "ray-start.log")
        return _samples(workflow, work, env, count, repeats)
    finally:
        _stop(node)
        said.close()
        shutil.rmtree(temp, ignore_errors=True)


def _samples(workflow: Path, work: Path, env: dict[str, str], count: int, repeats: int) -> dict[str, list[float]]:
    awf = [sys.executable, "-m", "awf", "run", str(workflow), "--run-root", str(work / "runs")]
    project = workflow.parent
    local, waited = [], []
    for number in range(repeats):  # interleaved, so a slow spell of the machine falls on both
        local.append(run_timed([*awf, "--id", f"l{number}", "--", str(STAGES)], cwd=project, env=env).seconds)
        placed = [*awf, "--id", f"w{number}", "--on", "ray", "--wait", "--", str(STAGES)]
        waited.append(run_timed(placed, cwd=project, env=env).seconds)
    started = time.perf_counter()
    with ThreadPoolExecutor(PLACERS) as pool:
        list(
            pool.map(
                lambda n: run_timed([*awf, "--id", f"b{n}", "--on", "ray", "--", str(STAGES)], cwd=project, env=env),
                range(count),
            )
        )
    outs = [work / "runs" / "bench-stages" / f"b{n}" / "out.json" for n in range(count)]
    deadline = time.monotonic() + 1800
    while not all(_completed(out) for out in outs):
        if time.monotonic() > deadline:
            raise BenchError(f"{sum(map(_completed, outs))} of {count} placed runs completed in 30 minutes")
        time.sleep(0.1)
    burst = [(time.perf_counter() - started) / count]
    return {"local": local, "waited": waited, "burst": burst}


def _completed(out: Path) -> bool:
    try:
        return bool(json.loads(out.read_text())["outcome"] == "completed")
    except (OSError, ValueError, KeyError):
        return False


def _wait_for_node(ray: Path, env: dict[str, str], node: subprocess.Popen[bytes], said: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if node.poll() is not None:
            raise BenchError(f"ray start exited {node.returncode}: {said.read_text(errors='replace')[-600:]}")
        status = subprocess.run([str(ray), "status"], env=env, capture_output=True, text=True, check=False)
        if status.returncode == 0 and "Active:" in status.stdout:
            return
        time.sleep(0.5)
    raise BenchError("the Ray node did not come up in 3 minutes")


def _stop(node: subprocess.Popen[bytes]) -> None:
    """End this node's processes alone (`ray stop` would end every Ray process on the machine)."""
    for number, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(node.pid, number)
        except ProcessLookupError:
            return
        try:
            node.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


def main(argv: list[str]) -> int:
    workflow, work, count, repeats = Path(argv[0]), Path(argv[1]), int(argv[2]), int(argv[3])
    try:
        found: Any = measure(workflow, work, count, repeats)
    except BenchError as problem:
        print(problem, file=sys.stderr)
        return 1
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
