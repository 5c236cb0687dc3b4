"""Timing for the benchmarks: samples, their median and spread, and ratios to a baseline of the same run.

A machine is noisy, so a figure is never one number: each is several samples taken in rounds
that interleave it with its baseline, and what counts is the ratio of the two medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MB = 1024 * 1024


class BenchError(Exception):
    """A benchmark that could not take its measurement (a command failed): a bug, never a time."""


@dataclass(frozen=True)
class Goal:
    """What a figure should reach: a ratio to its baseline (`ratio`), or an absolute bound (`below`)."""

    text: str
    ratio: float | None = None
    below: float | None = None

    def met(self, figure: Figure, ratio: float | None) -> bool | None:
        if self.ratio is not None:
            return None if ratio is None else ratio <= self.ratio
        if self.below is not None and figure.samples:
            return figure.median < self.below
        return None


@dataclass
class Figure:
    """One row of the table.

    `samples` are seconds for a time (per stage, per reused stage, or per command, as the label
    says) or bytes for memory. `baseline` is the key of the figure this one is divided by.
    """

    key: str
    family: str
    label: str
    samples: list[float] = field(default_factory=list)
    unit: str = "s"  # "s", "bytes", "×" for a ratio taken round by round, or "n" for a count
    baseline: str | None = None
    goal: Goal | None = None
    skipped: str | None = None  # why there is no measurement (a peer not installed, a command not built)
    error: str | None = None  # a benchmark that broke: reported, and the run exits 1
    short: str | None = None  # how the table names it as another figure's baseline

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.samples), max(self.samples)


def ratio_of(figure: Figure, figures: dict[str, Figure]) -> float | None:
    """The median of `figure` over the median of its baseline, both from this run."""
    base = figures.get(figure.baseline or "")
    if base is None or not base.samples or not figure.samples or base.median <= 0:
        return None
    return figure.median / base.median


def show(value: float, unit: str) -> str:
    if unit == "bytes":
        return f"{value / MB:.1f} MB"
    if unit == "×":
        return f"{value:.2f}×"
    if unit == "n":  # a count, or a count per thing
        return f"{value:.2f}".rstrip("0").rstrip(".")
    magnitude = abs(value)
    if magnitude >= 1:
        return f"{value:.2f} s"
    if magnitude >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} µs"


def table_rows(figures: Sequence[Figure]) -> list[list[str]]:
    by_key = {figure.key: figure for figure in figures}
    rows = []
    for figure in figures:
        if figure.error or figure.skipped or not figure.samples:
            why = f"error: {figure.error}" if figure.error else f"skipped: {figure.skipped or 'no samples'}"
            rows.append([figure.family, figure.label, why, "", "", "", "", ""])
            continue
        low, high = figure.spread
        ratio = ratio_of(figure, by_key)
        base = by_key.get(figure.baseline or "")
        goal = ""
        if figure.goal is not None:
            met = figure.goal.met(figure, ratio)
            goal = figure.goal.text + ("" if met is None else (" ✓" if met else " ✗ missed"))
        rows.append(
            [
                figure.family,
                figure.label,
                show(figure.median, figure.unit),
                f"{show(low, figure.unit)} – {show(high, figure.unit)}",
                str(len(figure.samples)),
                "" if ratio is None else f"{ratio:.2f}×",
                (base.short or base.label) if base is not None and ratio is not None else "",
                goal,
            ]
        )
    return rows


HEADERS = ["family", "figure", "median", "spread (min – max)", "n", "ratio", "to the baseline", "goal"]


def render(figures: Sequence[Figure]) -> str:
    from tabulate import tabulate

    return tabulate(table_rows(figures), headers=HEADERS, tablefmt="github", disable_numparse=True)


@dataclass
class Timed:
    """One command, run to its end: wall time, the peak resident memory of it and its children,
    and the CPU time (user and system) they spent."""

    seconds: float
    peak_rss: int
    code: int
    stdout: str
    stderr: str
    cpu: float = 0.0


def settle() -> None:
    """Write back what earlier work left dirty, so it is not charged to the next sample."""
    os.sync()


def run_timed(
    command: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    expect: Iterable[int] = (0,),
) -> Timed:
    """Run `command` and time it from spawn to exit. Raises BenchError on an unexpected exit code.

    Its output goes to pipes, as to a terminal: written to a file, it would add writes to the
    disk whose fsyncs are being measured."""
    start = time.perf_counter()
    process = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    captured: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda name=name, pipe=pipe: captured.__setitem__(name, pipe.read()))
        for name, pipe in (("out", process.stdout), ("err", process.stderr))
    ]
    for reader in readers:
        reader.start()
    # wait4 gives this child's own rusage: its peak RSS, not the largest of all children so far.
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    for pipe in (process.stdout, process.stderr):
        pipe.close()  # type: ignore[union-attr]
    timed = Timed(
        seconds,
        usage.ru_maxrss * 1024,
        process.returncode,
        captured.get("out", b"").decode(errors="replace"),
        captured.get("err", b"").decode(errors="replace"),
        usage.ru_utime + usage.ru_stime,
    )
    if timed.code not in tuple(expect):
        tail = "\n".join(timed.stderr.strip().splitlines()[-5:])
        raise BenchError(f"`{' '.join(command)}` exited {timed.code}: {tail}")
    return timed


def rounds(repeats: int, contenders: dict[str, Callable[[], Any]]) -> dict[str, list[Any] | BenchError]:
    """Each contender `repeats` times, interleaved round by round, so a slow spell of the machine
    falls on all of them alike; each round starts with the next contender, so none is always the
    one that follows another's burst of writes. Each call starts from a settled disk. A contender
    that fails is dropped from later rounds; its error takes the place of its samples."""
    results: dict[str, list[Any] | BenchError] = {name: [] for name in contenders}
    names = list(contenders)
    for index in range(repeats):
        turn = index % len(names)
        for name in names[turn:] + names[:turn]:
            measure = contenders[name]
            samples = results[name]
            if isinstance(samples, BenchError):
                continue
            settle()
            try:
                samples.append(measure())
            except BenchError as problem:
                results[name] = problem
    return results


Series = list[Any] | BenchError


def combine(compute: Callable[..., float], *series: Series) -> Series:
    """Samples made round by round from other samples (a difference, a quotient); an error passes through."""
    for one in series:
        if isinstance(one, BenchError):
            return one
    return [compute(*values) for values in zip(*series, strict=True)]


def filled(figure: Figure, samples: Series) -> Figure:
    """`figure` with its samples, or with the error that kept it from having any."""
    if isinstance(samples, BenchError):
        figure.error = str(samples)
    else:
        figure.samples = [float(value) for value in samples]
    return figure
