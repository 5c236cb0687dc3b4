"""Attempts placed on a real Ray cluster of three nodes, the record on the test's folder as the
shared storage. The cluster runs in a network namespace of the test's own with only loopback up
(`unshare -n`), so Ray, which would advertise the machine's address, reaches nothing else; every
awf command of these tests runs in that namespace too (`nsenter --net`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[test,ray]'")
pytestmark = pytest.mark.cluster

NODES = {"node-a": 2, "node-b": 2, "node-c": 2}  # each node holds two attempts of {"agents": 1}
RAY = Path(sys.executable).parent / "ray"


class Cluster:
    """A Ray cluster of three nodes on this machine, inside a network namespace of its own."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.holder = subprocess.Popen(
            ["unshare", "-n", "sh", "-c", "ip link set lo up && exec sleep infinity"], start_new_session=True
        )
        self.env = {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_raylet_start_wait_time_s": "180",  # a loaded machine registers a node slowly
            "RAY_ADDRESS": "127.0.0.1:6399",
            "NO_COLOR": "1",
            "PYTHONUNBUFFERED": "1",
        }
        deadline = time.monotonic() + 10
        while self._netns() == Path("/proc/self/ns/net").resolve() and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            self._start_nodes()
        except BaseException:
            self.stop()
            raise

    def _start_nodes(self) -> None:
        head = ["--head", "--port=6399", "--include-dashboard=false", "--disable-usage-stats"]
        for number, (name, agents) in enumerate(NODES.items()):
            where = head if number == 0 else ["--address=127.0.0.1:6399"]
            self.ns(
                str(RAY),
                "start",
                *where,
                "--node-ip-address=127.0.0.1",
                "--num-cpus=2",
                "--object-store-memory=80000000",
                f"--resources={json.dumps({name: 1, 'agents': agents})}",
                timeout=240,
                check=True,
            )

    def _netns(self) -> Path:
        try:
            return Path(f"/proc/{self.holder.pid}/ns/net").resolve()
        except OSError:
            return Path("/proc/self/ns/net").resolve()

    def prefix(self) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.holder.pid}/ns/net"]

    def ns(self, *words: str, timeout: float = 120, check: bool = False, cwd: Path | None = None) -> Any:
        done = subprocess.run(
            [*self.prefix(), *words], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{words} exited {done.returncode}: {done.stdout}{done.stderr}")
        return done

    def awf(self, project: Path, *args: str, timeout: float = 180) -> Any:
        return self.ns(sys.executable, "-m", "awf", *args, cwd=project, timeout=timeout)

    def stop(self) -> None:
        self.ns(str(RAY), "stop", "--force", timeout=120)
        os.killpg(self.holder.pid, signal.SIGKILL)
        self.holder.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not shutil.which("unshare") or not shutil.which("nsenter"):
        pytest.fail("the cluster tests need unshare and nsenter (util-linux)")
    made = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield made
    finally:
        made.stop()


WORKFLOW = """
import asyncio, json, os, time
from pathlib import Path
import awf


def note(wf, stage, started):
    # Each stage's work appends a line, so the test counts how often each ran, where and when.
    placed = json.loads(os.environ.get("AWF_PLACED_ON") or "{}")
    line = {"run": wf.run_id, "stage": stage, "start": started, "end": time.time(), "node": placed.get("node")}
    with open("notes.jsonl", "a") as notes:
        notes.write(json.dumps(line) + "\\n")


# Runs placed at once share the project folder knowingly: each only appends its notes.
@awf.workflow(
    name="trio", description="Three stages.", prepare=lambda argv: {"hold": float(argv[0])}, shares_folder=True
)
async def trio(wf, hold):
    async def one():
        started = time.time()
        time.sleep(hold)
        note(wf, "one", started)
        return "one"

    async def two():
        started = time.time()
        gate = Path(f"gate-{wf.run_id}")
        Path(f"in-two-{wf.run_id}").write_text(str(os.getpid()))
        while gate.exists():  # the test holds the stage open with this file
            await asyncio.sleep(0.1)
        note(wf, "two", started)
        return "two"

    await wf.stage("one", one, result={"type": "string"})
    await wf.stage("two", two, result={"type": "string"})
    await wf.stage("three", lambda: "three", result={"type": "string"})
    return wf.attempt
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "trio.py").write_text(WORKFLOW)
    return tmp_path


def notes(project: Path) -> list[dict[str, Any]]:
    path = project / "notes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def log(project: Path, run_id: str) -> list[dict[str, Any]]:
    path = project / ".awf" / "runs" / "trio" / run_id / "run.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_until(check: Any, timeout: float = 120, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"never happened: {what}")


def statuses(cluster: Cluster, project: Path) -> dict[str, str]:
    listed = cluster.awf(project, "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    return {row["id"]: row["status"] for row in json.loads(listed.stdout)["runs"]}


def test_runs_are_placed_across_the_nodes_and_no_node_holds_more_than_its_resources_allow(
    cluster: Cluster, project: Path
) -> None:
    count = 20
    command = ["run", "trio.py", "--on", "ray", "--ray-resources", '{"agents": 1}', "--", "4"]

    def place(n: int) -> None:
        placed = cluster.awf(project, *command[:2], "--id", f"r{n}", *command[2:], timeout=240)
        assert placed.returncode == 0, placed.stderr
        assert "follow it with: awf logs --follow trio/r" in placed.stderr

    with ThreadPoolExecutor(5) as pool:  # five placing commands at a time: each imports Ray
        list(pool.map(place, range(count)))
    # More attempts than the cluster holds at once: some wait in Ray's queue, and awf runs says so.
    seen = statuses(cluster, project)
    assert set(seen) == {f"r{n}" for n in range(count)}
    assert set(seen.values()) <= {"queued", "running", "completed"}
    wait_until(lambda: set(statuses(cluster, project).values()) == {"completed"}, 300, "every run completed")
    starts = {}
    for n in range(count):
        entries = log(project, f"r{n}")
        assert [e["kind"] for e in entries][:2] == ["run", "queued"]
        start = next(e for e in entries if e["kind"] == "attempt-start")
        assert start["placed"]["on"] == "ray" and start["placed"]["node"] and start["host"]
        starts[f"r{n}"] = start["placed"]["node"]
    ones = [note for note in notes(project) if note["stage"] == "one"]
    assert sorted(note["run"] for note in ones) == sorted(starts)  # each stage ran once, on its node
    assert all(note["node"] == starts[note["run"]] for note in ones)
    assert len(set(starts.values())) >= 2, "every attempt went to one node"
    for node in set(starts.values()):
        spans = [(note["start"], note["end"]) for note in ones if note["node"] == node]
        most = max(sum(1 for start, end in spans if start <= moment < end) for moment, _ in spans)
        assert most <= 2, f"node {node} held {most} attempts of {{'agents': 1}} at once; it has 2"


def test_awf_cancel_ends_a_placed_attempt_cancelled_and_a_continue_on_the_cluster_completes_it(
    cluster: Cluster, project: Path
) -> None:
    (project / "gate-c1").write_text("hold")
    placed = cluster.awf(project, "run", "trio.py", "--id", "c1", "--on", "ray", "--", "0")
    assert placed.returncode == 0, placed.stderr
    wait_until(lambda: (project / "in-two-c1").exists(), 120, "the attempt reached stage two")
    cancelled = cluster.awf(project, "cancel", "trio/c1")
    assert cancelled.returncode == 0, cancelled.stderr
    assert "ends cancelled" in cancelled.stderr
    end = wait_until(
        lambda: next((e for e in log(project, "c1") if e["kind"] == "attempt-end"), None), 60, "the attempt ended"
    )
    assert end["outcome"] == "cancelled" and end["exit_code"] == 128 + signal.SIGTERM and end["stage"] == "two"
    assert cluster.awf(project, "cancel", "trio/c1").returncode == 1  # nothing is running now
    (project / "gate-c1").unlink()
    again = cluster.awf(project, "run", "trio.py", "--id", "c1", "--continue", "--on", "ray", "--wait", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["value"] == 2
    assert [note["stage"] for note in notes(project) if note["run"] == "c1"] == ["one", "two"]  # one was reused


def test_a_node_lost_mid_attempt_leaves_the_run_interrupted_and_a_continue_on_another_node_reuses_what_ended(
    cluster: Cluster, project: Path
) -> None:
    (project / "gate-n1").write_text("hold")
    placed = cluster.awf(project, "run", "trio.py", "--id", "n1", "--on", "ray", "--", "0")
    assert placed.returncode == 0, placed.stderr
    wait_until(lambda: (project / "in-two-n1").exists(), 120, "the attempt reached stage two")
    attempt = int((project / "in-two-n1").read_text())
    worker = int(Path(f"/proc/{attempt}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(worker, signal.SIGKILL)  # the Ray worker holding the attempt dies, as with its node
    wait_until(lambda: statuses(cluster, project).get("n1") == "interrupted", 60, "the run read interrupted")
    (project / "gate-n1").unlink()
    again = cluster.awf(project, "run", "trio.py", "--id", "n1", "--continue", "--on", "ray", "--wait", "--json")
    assert again.returncode == 0, again.stderr
    assert [note["stage"] for note in notes(project) if note["run"] == "n1"] == ["one", "two"]


def test_two_continues_of_one_run_placed_at_once_run_one_attempt_and_the_other_is_withdrawn(
    cluster: Cluster, project: Path
) -> None:
    (project / "gate-t1").write_text("hold")
    first = cluster.awf(project, "run", "trio.py", "--id", "t1", "--on", "ray", "--", "0")
    assert first.returncode == 0, first.stderr
    wait_until(lambda: (project / "in-two-t1").exists(), 120, "the attempt reached stage two")
    cancelled = cluster.awf(project, "cancel", "trio/t1")
    assert cancelled.returncode == 0, cancelled.stderr
    wait_until(
        lambda: statuses(cluster, project).get("t1") == "cancelled",
        60,
        f"the attempt was cancelled: {log(project, 't1')} {statuses(cluster, project)}",
    )
    (project / "in-two-t1").unlink()
    both = [
        subprocess.Popen(
            [
                *cluster.prefix(),
                sys.executable,
                "-m",
                "awf",
                "run",
                "trio.py",
                "--id",
                "t1",
                "--continue",
                "--on",
                "ray",
            ],
            cwd=project,
            env=cluster.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    said = [process.communicate(timeout=180)[1] for process in both]
    codes = sorted(process.returncode for process in both)
    wait_until(lambda: (project / "in-two-t1").exists(), 120, "an attempt reached stage two")
    # One placement may be refused as it is placed (the other holds the run), or both are placed and
    # the node that comes second finds the run taken: either way one attempt runs.
    if codes == [0, 2]:
        # Refused as it was placed (naming the holder), or on its node (the placing command says so).
        assert any("taken by" in text or "did not start: awf run exited 2" in text for text in said), said
    else:
        assert codes == [0, 0], said
        withdrawn = wait_until(
            lambda: [e for e in log(project, "t1") if e["kind"] == "unqueued"], 120, "the second placement withdrawn"
        )
        assert len(withdrawn) == 1 and "exited 2" in withdrawn[0]["reason"]
    starts = [e for e in log(project, "t1") if e["kind"] == "attempt-start"]
    assert len(starts) == 2  # the first attempt, and one continue
    (project / "gate-t1").unlink()
    wait_until(lambda: statuses(cluster, project).get("t1") == "completed", 120, "the continue completed")


WAITER = """
import json, os
import awf


@awf.workflow(name="waiter", description="Wait for a go, then finish.", events={"go": None})
async def waiter(wf):
    first = await wf.stage("before", lambda: os.environ.get("AWF_PLACED_ON"), result={"type": ["string", "null"]})
    event = await wf.events.receive("go")
    after = await wf.stage("after", lambda: os.environ.get("AWF_PLACED_ON"), result={"type": ["string", "null"]})
    return {"before": first, "after": after, "went": event.value}
"""


def test_awf_serve_on_ray_wakes_a_parked_run_by_placing_its_next_attempt_on_the_cluster(
    cluster: Cluster, project: Path
) -> None:
    (project / "waiter.py").write_text(WAITER)
    parked = cluster.awf(project, "run", "waiter.py", "--id", "w1", "--json")  # here, not on Ray
    assert parked.returncode == 0, parked.stderr
    assert json.loads(parked.stdout)["outcome"] == "parked"
    serve = subprocess.Popen(
        [*cluster.prefix(), sys.executable, "-m", "awf", "serve", "--on", "ray", "--ray-resources", '{"agents": 1}'],
        cwd=project,
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        sent = cluster.awf(project, "send", "waiter/w1", "go", "--data", "7", "--no-wake")
        assert sent.returncode == 0, sent.stderr
        runs = project / ".awf" / "runs" / "waiter" / "w1" / "run.jsonl"
        wait_until(
            lambda: any(json.loads(line).get("outcome") == "completed" for line in runs.read_text().splitlines()),
            180,
            f"the woken attempt completed: {runs.read_text()}",
        )
    finally:
        serve.send_signal(signal.SIGTERM)
        said = serve.communicate(timeout=60)[0]
    assert serve.returncode == 0, said
    assert "placing attempts on Ray" in said and "woke waiter/w1: attempt 2 being placed on Ray" in said, said
    lines = [json.loads(line) for line in runs.read_text().splitlines()]
    queued = [line for line in lines if line["kind"] == "queued"]
    assert len(queued) == 1 and queued[0]["resources"] == {"agents": 1.0}
    second = [line for line in lines if line["kind"] == "attempt-start"][1]
    assert second["placed"]["on"] == "ray" and second["placed"]["token"] == queued[0]["token"]
    out = json.loads((runs.parent / "out.json").read_text())
    assert out["value"]["before"] is None and out["value"]["went"] == 7  # the first attempt ran here
    assert json.loads(out["value"]["after"])["token"] == queued[0]["token"]  # the second on a node


def test_a_run_placed_on_ray_that_parks_is_woken_by_awf_send_onto_the_cluster_again(
    cluster: Cluster, project: Path
) -> None:
    (project / "waiter.py").write_text(WAITER)
    placed = cluster.awf(project, "run", "waiter.py", "--id", "w2", "--on", "ray", "--wait", "--json")
    assert placed.returncode == 0, placed.stderr
    assert json.loads(placed.stdout)["outcome"] == "parked"
    sent = cluster.awf(project, "send", "waiter/w2", "go", "--data", "8")
    assert sent.returncode == 0 and "attempt 2 being placed on Ray" in sent.stderr, sent.stderr
    runs = project / ".awf" / "runs" / "waiter" / "w2" / "run.jsonl"
    wait_until(
        lambda: any(json.loads(line).get("outcome") == "completed" for line in runs.read_text().splitlines()),
        180,
        f"the woken attempt completed: {runs.read_text()}",
    )
    starts = [json.loads(line) for line in runs.read_text().splitlines() if '"attempt-start"' in line]
    assert [start["placed"]["on"] for start in starts] == ["ray", "ray"]


def test_awf_serve_on_ray_places_queued_attempts_on_the_cluster_never_more_than_max_attempts_at_once(
    cluster: Cluster, project: Path
) -> None:
    ids = [f"q{n}" for n in range(4)]
    for run_id in ids:
        queued = cluster.awf(project, "run", "trio.py", "--id", run_id, "--queue", "--", "0.5")
        assert queued.returncode == 0, queued.stderr
    serve = subprocess.Popen(
        [*cluster.prefix(), sys.executable, "-m", "awf", "serve", "--on", "ray", "--max-attempts", "2"],
        cwd=project,
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(lambda: set(statuses(cluster, project).values()) == {"completed"}, 300, "every queued run completed")
    finally:
        serve.send_signal(signal.SIGTERM)
        said = serve.communicate(timeout=60)[0]
    assert serve.returncode == 0, said
    spans = []
    for run_id in ids:
        entries = log(project, run_id)
        starts = [e for e in entries if e["kind"] == "attempt-start"]
        assert len(starts) == 1 and starts[0]["placed"]["on"] == "ray" and starts[0]["placed"]["node"]
        end = next(e for e in entries if e["kind"] == "attempt-end")
        spans.append((starts[0]["at"], end["at"]))
    most = max(sum(1 for start, end in spans if start <= moment < end) for moment, _ in spans)
    assert most <= 2, spans
    assert sorted(note["run"] for note in notes(project) if note["stage"] == "one") == ids  # each stage once


def test_the_cluster_benchmark_runs_to_its_table(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--tiny", "--only", "cluster", "--dir", str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| cluster")]
    assert len(rows) == 3 and not [row for row in rows if "error:" in row or "skipped:" in row], done.stdout
    assert "placed at once" in done.stdout and "local run" in done.stdout
