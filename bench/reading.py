"""Reading runs: `awf runs` over 10,000 runs beside a bare walk of the same folders, and how long a
change to a run's record takes to reach `awf watch`.

    python -m bench.reading [--quick] [--runs N]

`listing_figures` and `watch_figures` return figures for the bench table; run standalone, this
module prints them itself.

- Listing: 10,000 run folders, copies of real runs made by `awf run` (completed, stopped and
  failed ones), each with its own id. `awf runs` lists them, as a person runs it; the baseline is
  `os.walk` over the same folders in a fresh Python process, which is the least any listing must
  do. The goal is within 3× of the walk. The same two in one process (no start-up) are shown too.
- Watch latency: a real attempt waits in a stage while `awf watch` follows it. The benchmark
  appends a `log` line to the run's run.jsonl (as `wf.log` does, fsynced) and times how long until
  the line shows in watch's output: off a terminal (plain lines on a pipe) and on a
  pseudo-terminal (the live view). The goal is under 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

try:
    from .harness import Figure, Goal, rounds, run_timed
except ImportError:  # pragma: no cover - run as a script with no harness beside it
    from harness import Figure, Goal, rounds, run_timed  # type: ignore[no-redef]

FAMILY_LIST = "awf runs"
FAMILY_WATCH = "awf watch"
AWF = [sys.executable, "-m", "awf"]

WORKFLOW = textwrap.dedent("""
    import asyncio
    from pathlib import Path

    import awf


    @awf.workflow(name="reading", description="Three small stages.", version="1.0.0",
                  prepare=lambda argv: {"how": argv[0] if argv else "complete"})
    async def reading(wf, how):
        async def plan():
            return {"doc": "plan.md"}

        await wf.stage("plan", plan, result={"type": "object"}, summary=lambda p: p["doc"])

        async def build():
            if how == "stop":
                wf.stop("no answer")
            if how == "fail":
                raise RuntimeError("broken")
            if how == "wait":
                Path("ready").touch()
                while not Path("go").exists():
                    await asyncio.sleep(0.05)
            return {"branch": "fix"}

        await wf.stage("build", build, result={"type": "object"})
        await wf.stage("review", plan, result={"type": "object"})
""").lstrip()


def _env() -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("AWF_RUN_ROOT", None)
    return env


def make_runs(folder: Path, count: int) -> Path:
    """`count` run folders under `folder/runs`, copied from three real runs; returns the run root."""
    project = folder / "project"
    project.mkdir(parents=True)
    (project / "reading.py").write_text(WORKFLOW)
    for how in ("complete", "stop", "fail"):
        subprocess.run(
            [*AWF, "run", "reading.py", "--id", f"t-{how}", "--", how],
            cwd=project,
            env=_env(),
            capture_output=True,
            check=False,
        )
    templates = [project / ".awf" / "runs" / "reading" / f"t-{how}" for how in ("complete", "stop", "fail")]
    root = folder / "runs"
    workflow_dir = root / "reading"
    workflow_dir.mkdir(parents=True)
    logs = [(template / "run.jsonl").read_text() for template in templates]
    for i in range(count):
        template = templates[i % len(templates)]
        run_id = f"r{i:05d}"
        target = workflow_dir / run_id
        shutil.copytree(template, target)
        # Each copy is a run of its own: its run line names its own id.
        text = logs[i % len(logs)].replace(f'"id": "{template.name}"', f'"id": "{run_id}"', 1)
        (target / "run.jsonl").write_text(text)
    return root


_WALK = "import os, sys\nfor _ in os.walk(sys.argv[1]): pass\n"


def listing_figures(runs: int = 10_000, repeats: int = 5, scratch: Path | None = None) -> list[Figure]:
    """`awf runs` over `runs` runs, and the walk of the same folders, interleaved round by round."""
    from awf.record.summary import run_folders, summarize

    with tempfile.TemporaryDirectory(dir=scratch) as temp:
        root = make_runs(Path(temp), runs)
        env = _env()
        here = Path(temp)

        def awf_runs() -> float:
            timed = run_timed([*AWF, "runs", "--run-root", str(root)], cwd=here, env=env)
            if timed.stdout.count("\n") != runs + 1:
                raise RuntimeError(f"awf runs listed {timed.stdout.count(chr(10)) - 1} runs, not {runs}")
            return timed.seconds

        def awf_runs_cold() -> float:
            shutil.rmtree(root / ".cache", ignore_errors=True)  # nothing kept: every log is read
            return awf_runs()

        def walk() -> float:
            return run_timed([sys.executable, "-c", _WALK, str(root)], cwd=here, env=env).seconds

        def in_process_listing() -> float:
            start = time.perf_counter()
            listed = [summarize(paths) for paths in run_folders(root)]
            seconds = time.perf_counter() - start
            assert len(listed) == runs
            return seconds

        def in_process_walk() -> float:
            start = time.perf_counter()
            for _ in os.walk(root):
                pass
            return time.perf_counter() - start

        samples = rounds(
            repeats,
            {
                "cold": awf_runs_cold,
                "runs": awf_runs,
                "walk": walk,
                "read": in_process_listing,
                "bare": in_process_walk,
            },
        )
    label = f"{runs:,} runs"
    return [
        Figure("reading.walk", FAMILY_LIST, f"walk the folders of {label} (python -c os.walk)", samples["walk"]),
        Figure(
            "reading.runs-cold",
            FAMILY_LIST,
            f"awf runs over {label}, nothing kept (every log read)",
            samples["cold"],
            baseline="reading.walk",
        ),
        Figure(
            "reading.runs",
            FAMILY_LIST,
            f"awf runs over {label}, again (the summaries kept in .cache)",
            samples["runs"],
            baseline="reading.walk",
            goal=Goal("≤ 2.5× the walk", ratio=2.5),
        ),
        Figure("reading.walk-in", FAMILY_LIST, f"os.walk of {label}, in one process", samples["bare"]),
        Figure(
            "reading.read-in",
            FAMILY_LIST,
            f"summaries of {label}, in one process",
            samples["read"],
            baseline="reading.walk-in",
        ),
    ]


class _Output:
    """Text a process writes, with the time each piece arrived."""

    def __init__(self, read: Any) -> None:
        self.text = ""
        self.changed = threading.Condition()
        self._read = read
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        while True:
            try:
                data = self._read()
            except OSError:
                data = b""
            with self.changed:
                if not data:
                    self.text += "\0"  # the end
                    self.changed.notify_all()
                    return
                self.text += data.decode(errors="replace")
                self.changed.notify_all()

    def wait_for(self, needle: str, timeout: float = 20) -> float:
        """Block until `needle` has arrived; the perf_counter time it was seen."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while needle not in self.text:
                if "\0" in self.text or time.monotonic() > deadline:
                    raise RuntimeError(f"awf watch never showed {needle!r}: {self.text[-500:]!r}")
                self.changed.wait(0.5)
            return time.perf_counter()


def _watch_latencies(project: Path, log: Path, on_terminal: bool, pings: int) -> list[float]:
    from awf.record import entries
    from awf.record.files import append_line

    env = _env()
    if on_terminal:
        master, slave = pty.openpty()
        env["TERM"] = "xterm"
        process = subprocess.Popen(
            [*AWF, "watch", "reading/live"],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        output = _Output(lambda: os.read(master, 65536))
    else:
        process = subprocess.Popen(
            [*AWF, "watch", "reading/live"],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        output = _Output(lambda: os.read(process.stderr.fileno(), 65536))  # type: ignore[union-attr]
    try:
        output.wait_for("build")
        latencies = []
        for i in range(pings):
            text = f"ping-{'t' if on_terminal else 'p'}-{i:04d}"
            start = time.perf_counter()
            append_line(log, entries.log(attempt=1, stage="build", message=text))
            latencies.append(output.wait_for(text) - start)
            time.sleep(0.05)
        return latencies
    finally:
        process.terminate()
        process.wait(timeout=10)
        if on_terminal:
            os.close(master)


def watch_figures(pings: int = 30, scratch: Path | None = None) -> list[Figure]:
    """How long a line appended to a live run's run.jsonl takes to show in `awf watch`."""
    with tempfile.TemporaryDirectory(dir=scratch) as temp:
        project = Path(temp)
        (project / "reading.py").write_text(WORKFLOW)
        run = subprocess.Popen(
            [*AWF, "run", "reading.py", "--id", "live", "--", "wait"],
            cwd=project,
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while not (project / "ready").exists():
                if time.monotonic() > deadline or run.poll() is not None:
                    raise RuntimeError("the watched attempt never reached its waiting stage")
                time.sleep(0.02)
            log = project / ".awf" / "runs" / "reading" / "live" / "run.jsonl"
            plain = _watch_latencies(project, log, False, pings)
            live = _watch_latencies(project, log, True, pings)
        finally:
            (project / "go").touch()
            try:
                run.wait(timeout=30)
            except subprocess.TimeoutExpired:
                run.kill()
    goal = Goal("< 100 ms", below=0.100)
    return [
        Figure(
            "reading.watch-lines", FAMILY_WATCH, "a record change shown by awf watch (plain lines)", plain, goal=goal
        ),
        Figure(
            "reading.watch-live",
            FAMILY_WATCH,
            "a record change shown by awf watch (live view, a terminal)",
            live,
            goal=goal,
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reading", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 runs, 3 rounds, 10 pings")
    parser.add_argument("--runs", type=int, default=None, help="how many runs to list (10,000)")
    args = parser.parse_args(argv)
    runs = args.runs or (1_000 if args.quick else 10_000)
    figures = listing_figures(runs, repeats=3 if args.quick else 5)
    figures += watch_figures(pings=10 if args.quick else 30)
    try:
        from .harness import render
    except ImportError:  # pragma: no cover
        from harness import render  # type: ignore[no-redef]
    print(render(figures))
    print(json.dumps({figure.key: round(figure.median, 6) for figure in figures if figure.samples}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
