"""`python -m bench [--quick]`: every benchmark, one table."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from . import (
    against,
    agent_start,
    big_logs,
    cluster,
    continuing,
    machine,
    memory,
    output,
    queueing,
    scale,
    serving,
    stage_overhead,
    startup,
)
from .harness import Figure, render
from .session import Config, Session

Family = Callable[[Session], list[Figure]]


def families() -> list[tuple[str, Family]]:
    return [
        ("start-up", startup.figures),
        ("agent start", agent_start.figures),
        ("stage overhead", stage_overhead.figures),
        ("continue", continuing.figures),
        ("memory", memory.figures),
        ("output", output.figures),
        ("scale", scale.figures),
        ("reading", reading_figures),
        ("big log", big_logs.figures),
        ("serve", serving.figures),
        ("queue", queueing.figures),
        ("cluster", cluster.figures),
        ("before/after", against.figures),
    ]


def reading_figures(session: Session) -> list[Figure]:
    """Listing many runs and the latency of `awf watch`, from bench/reading.py where it is built."""
    config = session.config
    try:
        from . import reading

        found = reading.listing_figures(runs=config.runs, repeats=config.repeats, scratch=session.work)
        found += reading.watch_figures(pings=max(2, config.startup_repeats), scratch=session.work)
    except ImportError as missing:  # the module, or the part of awf it reads, is not built yet
        return [Figure("reading", "reading", "listing runs, watch latency", skipped=f"not built yet ({missing})")]
    except Exception as problem:  # a broken benchmark is reported in the table, and the run exits 1
        return [
            Figure("reading", "reading", "listing runs, watch latency", error=f"{type(problem).__name__}: {problem}")
        ]
    return found


def run(
    config: Config,
    work: Path,
    say: Callable[[str], None],
    only: list[str] | None = None,
    against: list[str] | None = None,
) -> list[Figure]:
    session = Session(config, work, against)
    say("warming up")
    session.warm_up()
    figures: list[Figure] = []
    for name, family in families():
        if only and name not in only:
            continue
        started = time.monotonic()
        say(f"{name}…")
        try:
            figures += family(session)
        except Exception as problem:  # a bug in one family is reported in the table; the others still run
            figures.append(Figure(name, name, "(the whole family)", error=f"{type(problem).__name__}: {problem}"))
        say(f"{name}: {time.monotonic() - started:.0f} s")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="a short pass: fewer samples, sizes up to 1,000")
    size.add_argument("--tiny", action="store_true", help="each benchmark once at toy sizes (what the tests run)")
    parser.add_argument(
        "--dir", type=Path, help="the scratch folder (default: a temporary one); its disk is the disk measured"
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=[name for name, _ in families()],
        metavar="FAMILY",
        help="measure this family alone (again for more): " + ", ".join(name for name, _ in families()),
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="AWF",
        help="another awf's console script (an older install's bin/awf): its figures beside this awf's",
    )
    args = parser.parse_args(argv)
    if args.against is not None and not args.against.is_file():
        parser.error(f"--against {args.against}: no such file; give the other installation's bin/awf")
    config = Config.tiny() if args.tiny else Config.quick() if args.quick else Config.full()
    parent = args.dir
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="awf-bench-", dir=parent))

    def say(text: str) -> None:
        print(f"bench: {text}", file=sys.stderr, flush=True)

    try:
        other = [str(args.against.absolute())] if args.against is not None else None
        figures = run(config, work, say, args.only, other)
        mode = "tiny" if args.tiny else "quick" if args.quick else "full"
        print("\n".join([f"awf benchmarks ({mode} pass)", *machine.describe(work), ""]))
        print(render(figures))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    broken = [figure for figure in figures if figure.error]
    for figure in broken:
        say(f"{figure.label}: {figure.error}")
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
