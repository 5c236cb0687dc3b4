"""The benchmarks run once at toy sizes, so their code cannot rot. No time is ever asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import peers, stage_overhead  # noqa: E402
from bench.__main__ import families  # noqa: E402
from bench.harness import Figure, Goal, render  # noqa: E402
from bench.session import Config, Session  # noqa: E402

FAMILIES = [
    "start-up",
    "agent start",
    "stage overhead",
    "continue",
    "memory",
    "output",
    "scale",
    "serve",
    "big log",
    "queue",
]
ALL_BUT_THE_CLUSTER = [word for name, _ in families() if name != "cluster" for word in ("--only", name)]


def test_every_benchmark_runs_to_its_table(tmp_path: Path) -> None:
    done = subprocess.run(
        # The cluster family starts Ray: it runs with the cluster tests (tests/test_cluster.py).
        [sys.executable, "-m", "bench", "--tiny", "--dir", str(tmp_path), *ALL_BUT_THE_CLUSTER],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    assert not [row for row in rows if "error:" in row], done.stdout
    families = {row.split("|")[1].strip() for row in rows}
    assert set(FAMILIES) <= families, families
    assert "disk: " in done.stdout and "cpus: " in done.stdout
    for row in rows:
        cells = [cell.strip() for cell in row.split("|")[1:-1]]
        # every figure has a median, or says why it was skipped
        assert cells[2] and (cells[2].startswith("skipped: ") or cells[2][0] in "-0123456789"), row
    assert list(tmp_path.iterdir()) == [], "the scratch folder is left behind"


def test_a_peer_that_is_not_installed_is_skipped_and_awf_still_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(peers, "PEERS", {"nothere": ("Not There", ["no_such_module_for_awf_bench"])})
    figures = {figure.key: figure for figure in stage_overhead.figures(Session(Config.tiny(), tmp_path))}
    assert "no_such_module_for_awf_bench is not installed" in (figures["stages.nothere"].skipped or "")
    assert figures["stages.awf"].samples and figures["stages.floor"].samples
    assert not [figure.error for figure in figures.values() if figure.error]


def test_the_table_shows_medians_ratios_and_goals() -> None:
    base = Figure("base", "f", "the base", [0.002, 0.001, 0.003], short="base")
    slow = Figure("slow", "f", "slow one", [0.004, 0.005, 0.006], baseline="base", goal=Goal("≤ 1.5×", ratio=1.5))
    small = Figure("mem", "f", "memory", [50 * 1024 * 1024], unit="bytes", goal=Goal("< 60 MB", below=60 * 2**20))
    gone = Figure("gone", "f", "a peer", skipped="not installed")
    table = render([base, slow, small, gone])
    assert "2.00 ms" in table and "1.00 ms – 3.00 ms" in table
    assert "2.50×" in table and "≤ 1.5× ✗ missed" in table
    assert "50.0 MB" in table and "< 60 MB ✓" in table
    assert "skipped: not installed" in table


def test_before_and_after_sets_each_figure_beside_the_other_awfs(tmp_path: Path) -> None:
    other = Path(sys.executable).with_name("awf")  # this awf again, as another installation would be
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--tiny",
            "--dir",
            str(tmp_path),
            "--only",
            "before/after",
            "--against",
            str(other),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [
        [cell.strip() for cell in line.split("|")[1:-1]] for line in done.stdout.splitlines() if "before/after" in line
    ]
    assert len(rows) == 10 and not [row for row in rows if "error:" in row[2]], done.stdout
    assert all(row[5].endswith("×") and row[6] == "before" for row in rows if "this awf" in row[1]), rows
    missing = subprocess.run(
        [sys.executable, "-m", "bench", "--tiny", "--against", str(tmp_path / "nowhere")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "no such file" in missing.stderr
