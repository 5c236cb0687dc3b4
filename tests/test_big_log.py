"""A run whose run.jsonl is far larger than memory should need: reading it streams.

One run with 100,000 stage and turn lines (about 150 MB); each reader runs as the real CLI, and
its peak resident memory must stay under half the log's size above what `awf --version` takes. A
reader that held the log, or a list of its lines, would need several times the log's size. Each
command is started by a small Python of its own, which reports the peak of its one child: a child
forked from this test's process would count the test's memory as its own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from conftest import AWF  # noqa: E402

from bench.big_log import make_big_run  # noqa: E402

LINES = 100_000
PADDING = 2000  # characters a line: the log's size, not its count of stages and turns, is what grows
PEAK = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, done.stderr[-2000:])"
)


def peak_of(command: list[str], cwd: Path, expect: int = 0) -> int:
    """The peak resident memory of `command`, in bytes."""
    done = subprocess.run([sys.executable, "-c", PEAK, *command], cwd=cwd, capture_output=True, text=True, check=True)
    code, rss, said = done.stdout.split(" ", 2)
    assert int(code) == expect, said
    return int(rss)


def test_reading_a_big_log_takes_memory_far_below_its_size(tmp_path: Path):
    big = make_big_run(tmp_path / "project", AWF, LINES, PADDING)
    size = big.log.stat().st_size
    floor = peak_of([*AWF, "--version"], big.project)
    bound = floor + size // 2

    def peak(*argv: str) -> int:
        return peak_of([*AWF, *argv], big.project)

    shown = peak("runs", big.name)
    after = peak("logs", big.name, "--after", str(big.last_cursor()))
    (big.project / "GO").touch()
    went_on = peak("run", str(big.workflow_file), "--id", "r1", "--continue")

    mb = 1024 * 1024
    said = (
        f"log {size / mb:.0f} MB, awf --version {floor / mb:.0f} MB; awf runs {shown / mb:.0f} MB, "
        f"awf logs --after {after / mb:.0f} MB, a continue {went_on / mb:.0f} MB; bound {bound / mb:.0f} MB"
    )
    assert size > 100 * mb, said
    assert max(shown, after, went_on) < bound, said
