"""One benchmark run: its sizes, its scratch folder, the generated workflow and the `awf` command.

Measurements that several families need (an `awf run` of 1,000 stages gives both a time and a
peak memory) are taken once and shared through `Session.once`.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .harness import Timed, run_timed

WORKFLOW = "bench-stages"

# A workflow as a user writes one: each stage an async function returning a small value checked
# by a result schema. BENCH_STOP_AT stops the attempt before that stage, so a run can be left with
# every stage but the last recorded, for a continue to finish.
STAGES_FILE = textwrap.dedent("""
    import os

    import awf

    VALUE = {"type": "object", "required": ["i"], "properties": {"i": {"type": "integer"}}}


    # Its stages write nothing in the folder: many runs of it may work there at once.
    @awf.workflow(name="bench-stages", description="Trivial stages with small values.", version="1.0.0",
                  prepare=lambda argv: {"n": int(argv[0])}, shares_folder=True)
    async def stages(wf: awf.Context, n: int):
        stop_at = int(os.environ.get("BENCH_STOP_AT", "-1"))
        for i in range(n):
            if i == stop_at:
                wf.stop(f"stopped before stage {i}, as the benchmark asked")

            async def work(i=i):
                return {"i": i}

            await wf.stage(f"s{i:05d}", work, result=VALUE)
        return {"stages": n}
""").lstrip()


@dataclass(frozen=True)
class Config:
    """How big and how often. `stages` is the headline size; `scale` the sizes of the growth table."""

    stages: int = 1000
    scale: tuple[int, ...] = (10, 100, 1000, 10000)
    runs: int = 10000  # the runs `awf runs` lists for its memory figure
    repeats: int = 5  # samples of each figure at the headline size and below
    large_repeats: int = 2  # samples at sizes above the headline size
    startup_repeats: int = 20  # commands that take tens of milliseconds need more samples
    output_bytes: int = 2**30  # what the agent of the output figures prints before its answer
    placed: int = 100  # the runs placed on Ray at once
    big_log_lines: int = 100_000  # the stage and turn lines of the big log's run
    queued: int = 200  # the runs of the queue family, queued and drained four at a time

    @classmethod
    def full(cls) -> Config:
        return cls()

    @classmethod
    def quick(cls) -> Config:
        return cls(scale=(10, 100, 1000), repeats=3, large_repeats=1, startup_repeats=10)

    @classmethod
    def tiny(cls) -> Config:
        """Every benchmark once at toy sizes: what the tests run so the code cannot rot."""
        return cls(
            stages=4,
            scale=(2, 4, 8),
            runs=12,
            repeats=2,
            large_repeats=1,
            startup_repeats=1,
            output_bytes=2**20,
            placed=4,
            big_log_lines=300,
            queued=6,
        )

    def repeats_at(self, size: int) -> int:
        return self.repeats if size <= self.stages else self.large_repeats


def awf_command() -> list[str]:
    """The `awf` console script beside this Python, as a user runs it; else `python -m awf`."""
    script = Path(sys.executable).with_name("awf")
    return [str(script)] if script.exists() else [sys.executable, "-m", "awf"]


class Session:
    """The scratch folder of one benchmark run and what its families share."""

    def __init__(self, config: Config, work: Path, against: list[str] | None = None) -> None:
        self.config = config
        self.work = work
        self.project = work / "project"
        self.project.mkdir(parents=True, exist_ok=True)
        self.workflow_file = self.project / "stages.py"
        self.workflow_file.write_text(STAGES_FILE)
        self.awf = awf_command()
        self.against = against  # another awf to set this one beside (bench/against.py), or None
        self.env = {**os.environ, "NO_COLOR": "1"}
        for name in ("BENCH_STOP_AT", "PYTHONDONTWRITEBYTECODE"):  # compiled code is cached, as for a user
            self.env.pop(name, None)
        self._once: dict[Any, Any] = {}
        self._counter = 0

    def once(self, key: Any, compute: Callable[[], Any]) -> Any:
        if key not in self._once:
            self._once[key] = compute()
        return self._once[key]

    def scratch(self, name: str) -> Path:
        """A new empty folder under the work folder."""
        self._counter += 1
        path = self.work / f"{name}-{self._counter}"
        path.mkdir(parents=True)
        return path

    def awf_run(
        self,
        size: int,
        root: Path,
        *,
        run_id: str = "r",
        stop_at: int | None = None,
        resume: bool = False,
        awf: list[str] | None = None,
    ) -> Timed:
        """`awf run` of the generated workflow: a new run of `size` stages, or a continue of one;
        by `awf`, another installation's command, when given."""
        env = dict(self.env)
        if stop_at is not None:
            env["BENCH_STOP_AT"] = str(stop_at)
        command = [*(awf or self.awf), "run", str(self.workflow_file), "--id", run_id, "--run-root", str(root)]
        if resume:
            command.append("--continue")
        else:
            command += ["--", str(size)]
        return run_timed(command, cwd=self.project, env=env, expect=(3,) if stop_at is not None else (0,))

    def awf_version(self) -> Timed:
        return run_timed([*self.awf, "--version"], cwd=self.project, env=self.env)

    def warm_up(self) -> None:
        """One small run first, so no measurement pays for compiling the workflow or awf."""
        root = self.scratch("warm-up")
        self.awf_run(2, root)
        self.awf_version()

    def discard(self, path: Path) -> None:
        """Remove a scratch folder that is measured no more."""
        shutil.rmtree(path, ignore_errors=True)
