"""The queue: many runs handed to `awf serve --max-attempts 4`, against a shell loop four at a time.

- Drain: 200 runs of 3 short stages each (`Config.queued`), queued with `awf run --queue`; the
  time from the last `--queue` to every run completed, with `awf serve --max-attempts 4`
  started then. Its baseline is the same runs started by a shell loop four at a time (`xargs -P
  4 awf run`), so the table prints the ratio: what waiting in the queue costs over starting by hand.
- Serve's CPU time (user + system) over the drain, and its peak memory, with every run queued.

No goal is set on a time: the figures are measured and shown, never failed on.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
import time
from pathlib import Path

from .harness import BenchError, Figure, run_timed
from .serving import wait_until
from .session import Session

FAMILY = "queue"

THREE = textwrap.dedent("""
    import asyncio

    import awf


    @awf.workflow(name="bench-three", description="Three short stages.", prepare=lambda argv: {"n": argv[0]},
                  shares_folder=True)
    async def three(wf: awf.Context, n: str):
        async def step():
            await asyncio.sleep(0.01)
            return n

        for name in ("plan", "build", "review"):
            await wf.stage(name, step, result={"type": "string"})
        return n
""").lstrip()


def _completed(root: Path, count: int) -> bool:
    """Whether every run under `root` has ended completed (each run's out.json says so)."""
    outs = list(root.glob("bench-three/*/out.json"))
    return len(outs) == count and all('"completed"' in out.read_text() for out in outs)


def _peak_memory(pid: int) -> float:
    """The peak resident memory of a process, in bytes (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return float(line.split()[1]) * 1024
    return 0.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _served(session: Session, file: Path, ids: list[str]) -> tuple[float, float, float]:
    """The runs queued, then drained by serve: seconds from the last --queue, serve's CPU and peak memory."""
    root = session.scratch("queue-served")
    for run_id in ids:
        run_timed(
            [*session.awf, "run", str(file), "--id", run_id, "--run-root", str(root), "--queue", "--", run_id],
            cwd=session.project,
            env=session.env,
        )
    started = time.perf_counter()
    said = root.parent / f"{root.name}-serve.stderr"
    with said.open("w") as stderr:
        serve = subprocess.Popen(
            [*session.awf, "serve", "--run-root", str(root), "--max-attempts", "4"],
            cwd=session.project,
            env=session.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_until(lambda: serve.poll() is None and _completed(root, len(ids)), "every queued run to complete", 3600)
        seconds = time.perf_counter() - started
        cpu, memory = _cpu_seconds(serve.pid), _peak_memory(serve.pid)
    except BenchError as late:
        raise BenchError(f"{late} (serve said: {said.read_text(errors='replace')[-600:]})") from None
    finally:
        serve.terminate()
        serve.wait(timeout=60)
    session.discard(root)
    return seconds, cpu, memory


def _by_shell(session: Session, file: Path, ids: list[str]) -> float:
    """The same runs started by a shell loop four at a time: seconds until the last has ended."""
    root = session.scratch("queue-shell")
    awf = " ".join(session.awf)
    loop = f"xargs -P 4 -I ID {awf} run {file} --id ID --run-root {root} -- ID"
    started = time.perf_counter()
    done = subprocess.run(
        ["sh", "-c", loop],
        input="\n".join(ids) + "\n",
        cwd=session.project,
        env=session.env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0 or not _completed(root, len(ids)):
        raise BenchError(f"the shell loop exited {done.returncode}: {done.stderr[-600:]}")
    session.discard(root)
    return seconds


def figures(session: Session) -> list[Figure]:
    count = session.config.queued
    shell = Figure("queue.shell", FAMILY, f"{count} runs of 3 stages by a shell loop, 4 at a time", short="shell loop")
    drain = Figure(
        "queue.drain",
        FAMILY,
        f"{count} queued runs of 3 stages, serve --max-attempts 4: last --queue to all completed",
        baseline="queue.shell",
    )
    cpu = Figure("queue.serve-cpu", FAMILY, f"awf serve CPU while draining {count} queued runs")
    memory = Figure("queue.serve-memory", FAMILY, f"awf serve peak memory with {count} runs queued", unit="bytes")
    file = session.project / "bench_three.py"
    file.write_text(THREE)
    ids = [f"q{index:04d}" for index in range(count)]
    try:
        for _ in range(max(1, session.config.large_repeats)):
            shell.samples.append(_by_shell(session, file, ids))
            seconds, used, peak = _served(session, file, ids)
            drain.samples.append(seconds)
            cpu.samples.append(used)
            memory.samples.append(peak)
    except BenchError as problem:
        return [Figure("queue.drain", FAMILY, "the queue", error=str(problem))]
    return [shell, drain, cpu, memory]
