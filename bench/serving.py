"""`awf serve`: what it costs asleep, how many attempts a burst of events starts, how late a timer is.

- Idle: serve beside 1,000 parked runs with events (half of them have handled an event, all
  wait for one that never comes), its CPU time (user + system, from /proc) over 10 idle
  seconds once it has looked at them.
- Burst: 200 events sent by `awf send` (four at a time, each waking its run) over 30 parked runs
  that handle events in a loop, with serve running: the continues started per event handled, the
  continues refused for another attempt holding the run, and the time from each send to the take
  of its event (median, and the 90th percentile as a figure of its own).
- Timers: runs that sleep 2 s, woken by serve: how late the stage after the sleep starts, past
  its due time, and the wakes serve logs per timer.

The runs are made fast, as memory.py makes them: one model run of each kind by the real awf,
its folder copied under new ids.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .harness import BenchError, Figure, Goal, run_timed
from .session import Session

FAMILY = "serve"

INBOX = textwrap.dedent("""
    import awf

    @awf.workflow(name="bench-inbox", description="Handle events one stage each, forever.", events={"x": None},
                  shares_folder=True)
    async def inbox(wf: awf.Context):
        number = 0
        while True:
            event = await wf.events.receive("x")
            await wf.stage(f"handle-{number}", lambda: event.value, result={"type": "integer"})
            number += 1
""").lstrip()

SLEEPER = textwrap.dedent("""
    import awf

    @awf.workflow(name="bench-sleeper", description="Sleep, then one stage.", events={"unused": None})
    async def sleeper(wf: awf.Context):
        await wf.events.sleep("nap", "SECONDS")
        return await wf.stage("after", lambda: wf.attempt, result={"type": "integer"})
""").lstrip()


class Serving:
    """`awf serve` on a run root, in the background, until stopped."""

    def __init__(self, session: Session, root: Path) -> None:
        self.root = root
        self.log = root / "serve.log"
        self.said = root.parent / f"{root.name}-serve.stderr"  # what serve says when it fails
        with self.said.open("w") as said:
            self.process = subprocess.Popen(
                [*session.awf, "serve", "--run-root", str(root)],
                cwd=session.project,
                env=session.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=said,
            )
        self.wait_for("asleep until", timeout=600)

    def lines(self) -> list[str]:
        if not self.log.exists():
            return []
        return [json.loads(line)["text"] for line in self.log.read_text().splitlines() if line.strip()]

    def wait_for(self, text: str, timeout: float = 120) -> None:
        wait_until(lambda: any(text in line for line in self.lines()), f"serve.log to say {text!r}", timeout)

    def cpu_seconds(self) -> float:
        """User and system time of serve's process so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def alive(self) -> bool:
        """True while serve runs; BenchError with what it said once it has exited by itself."""
        if self.process.poll() is None:
            return True
        said = self.said.read_text(errors="replace").strip()[-600:]
        raise BenchError(f"awf serve exited {self.process.returncode} by itself: {said}")

    def stop(self) -> None:
        self.alive()
        self.process.terminate()
        if self.process.wait(timeout=60) != 0:
            said = self.said.read_text(errors="replace").strip()[-600:]
            raise BenchError(f"awf serve exited {self.process.returncode}: {said}")


def wait_until(condition: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise BenchError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.05)


def log_lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "run.jsonl").read_text().splitlines() if line.strip()]


def seconds_of(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text).timestamp()


def copies(session: Session, model: Path, count: int, prefix: str) -> None:
    """`count` copies of a run folder beside it, under new ids."""
    for index in range(count):
        shutil.copytree(model, model.parent / f"{prefix}-{index:05d}")


def awf(session: Session, *args: str, expect: tuple[int, ...] = (0,)) -> None:
    run_timed([*session.awf, *args], cwd=session.project, env=session.env, expect=expect)


def idle_figures(session: Session) -> list[Figure]:
    config = session.config
    runs = min(config.runs, 1000)
    seconds = 10.0 if runs >= 1000 else 1.0
    label = f"awf serve CPU over {seconds:.0f} idle s beside {runs:,} runs (1% of a core: {seconds / 100:.2f} s)"
    figure = Figure("serve.idle", FAMILY, label, goal=Goal(f"< {seconds / 100:.2f} s", below=seconds / 100))
    root = session.scratch("serve-idle")
    inbox = session.project / "bench_inbox.py"
    inbox.write_text(INBOX)
    runs_dir = root / "bench-inbox"
    awf(session, "run", str(inbox), "--id", "model", "--run-root", str(root))
    copies(session, runs_dir / "model", runs // 2, "parked")  # parked on an event that never comes
    awf(session, "send", "bench-inbox/model", "x", "--data", "1", "--no-wake", "--run-root", str(root))
    awf(session, "run", str(inbox), "--id", "model", "--continue", "--run-root", str(root))
    copies(session, runs_dir / "model", runs - runs // 2, "handled")  # took one event, parked for the next
    shutil.rmtree(runs_dir / "model")
    serve = Serving(session, root)
    try:
        for _ in range(config.repeats):
            before = serve.cpu_seconds()
            time.sleep(seconds)
            figure.samples.append(serve.cpu_seconds() - before)
    finally:
        serve.stop()
        session.discard(root)
    return [figure]


def burst_figures(session: Session) -> list[Figure]:
    runs, events = (30, 200) if session.config.runs >= 1000 else (3, 6)
    per_event = Figure(
        "serve.attempts",
        FAMILY,
        f"continues started per event, {events} events over {runs} runs",
        unit="n",
        goal=Goal("≤ 1", below=1.000001),
    )
    refused = Figure("serve.refused", FAMILY, "continues refused in that burst", unit="n", goal=Goal("0", below=0.5))
    latency = Figure("serve.latency", FAMILY, "send to take, per event (median)")
    p90 = Figure("serve.latency90", FAMILY, "send to take, per event (90th percentile)")
    root = session.scratch("serve-burst")
    inbox = session.project / "bench_inbox.py"
    inbox.write_text(INBOX)
    awf(session, "run", str(inbox), "--id", "r-model", "--run-root", str(root))
    copies(session, root / "bench-inbox" / "r-model", runs, "r")
    shutil.rmtree(root / "bench-inbox" / "r-model")
    serve = Serving(session, root)
    try:
        jobs = [f"bench-inbox/r-{index % runs:05d}" for index in range(events)]

        def send(target: str) -> None:
            awf(session, "send", target, "x", "--data", "1", "--run-root", str(root))

        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(send, jobs))

        def all_taken() -> bool:
            return sum(sum(1 for e in log_lines(run) if e["kind"] == "take") for run in run_dirs(root)) == events

        wait_until(all_taken, "every event to be taken", timeout=600)
        wait_until(lambda: not list(root.glob("*/*/attempt.pid")), "the last attempts to end", timeout=120)
    finally:
        serve.stop()
    started = 0
    latencies = []
    wake_logs = ""
    for run in run_dirs(root):
        lines = log_lines(run)
        started += sum(1 for e in lines if e["kind"] == "attempt-start" and e["attempt"] > 1)
        sent = {
            e["id"]: seconds_of(e["sent"])
            for e in map(json.loads, (run / "events.jsonl").read_text().splitlines())
            if e.get("kind") == "event"
        }
        latencies += [seconds_of(e["at"]) - sent[e["event"]] for e in lines if e["kind"] == "take"]
        wake_logs += (run / "wake.log").read_text() if (run / "wake.log").exists() else ""
    per_event.samples = [started / events]
    refused.samples = [float(wake_logs.count("is taken by"))]
    latency.samples = latencies
    p90.samples = [statistics.quantiles(latencies, n=10)[-1]] if len(latencies) > 1 else latencies
    session.discard(root)
    return [per_event, refused, latency, p90]


def run_dirs(root: Path) -> list[Path]:
    return sorted(path.parent for path in root.glob("*/*/run.jsonl"))


def timer_figures(session: Session) -> list[Figure]:
    runs = 5 if session.config.runs >= 1000 else 1
    late = Figure("serve.timer", FAMILY, "a 2 s timer: its stage starts past the due time", goal=Goal("< 1 s", below=1))
    wakes = Figure("serve.timer-wakes", FAMILY, "wakes serve logs per timer", unit="n", goal=Goal("1", below=1.5))
    root = session.scratch("serve-timers")
    sleeper = session.project / "bench_sleeper.py"
    sleeper.write_text(SLEEPER.replace("SECONDS", "2s"))
    serve = Serving(session, root)
    try:
        for index in range(runs):
            awf(session, "run", str(sleeper), "--id", f"t{index}", "--run-root", str(root))
        try:
            wait_until(
                lambda: (
                    serve.alive()
                    and all(
                        (run / "out.json").exists() and '"completed"' in (run / "out.json").read_text()
                        for run in run_dirs(root)
                    )
                ),
                "every sleeper to complete",
                timeout=120,
            )
        except BenchError as late:
            told = "; ".join(serve.lines()[-6:])
            kinds = [[line["kind"] for line in log_lines(run)] for run in run_dirs(root)]
            raise BenchError(f"{late} (serve.log: {told}; the runs' lines: {kinds})") from None
    finally:
        serve.stop()
    for run in run_dirs(root):
        lines = log_lines(run)
        due = next(seconds_of(e["due"]) for e in lines if e["kind"] == "timer")
        began = next(seconds_of(e["at"]) for e in lines if e["kind"] == "stage-start" and e["stage"] == "after")
        late.samples.append(began - due)
        wakes.samples.append(
            float(sum(1 for line in serve.lines() if line.startswith(f"woke {run.parent.name}/{run.name}:")))
        )
    session.discard(root)
    return [late, wakes]


def figures(session: Session) -> list[Figure]:
    found: list[Figure] = []
    for family in (idle_figures, burst_figures, timer_figures):
        try:
            found += family(session)
        except BenchError as problem:
            found.append(Figure(f"serve.{family.__name__}", FAMILY, family.__name__, error=str(problem)))
    return found
