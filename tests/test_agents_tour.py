"""The README's first command: the tour runs, with its stop and its continue."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOUR = Path(__file__).resolve().parent.parent / "examples" / "tour.sh"


@pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bash") is None,
    reason="the tour needs git and bash: apt-get install git bash",
)
def test_the_tour_stops_in_review_and_the_continue_completes(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    awf = bin_dir / "awf"
    awf.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m awf "$@"\n')
    awf.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(tmp_path), "NO_COLOR": "1"}
    done = subprocess.run(
        ["bash", str(TOUR)], env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(exit 3: the run stopped in review" in done.stdout
    assert "■ fix-issue/212 stopped in review (attempt 1, exit 3)" in done.stderr
    assert "↻ reviewer has not answered" in done.stderr
    assert "↺ plan  from attempt 1 · fix/212" in done.stderr
    assert "✓ fix-issue/212 completed (attempt 2)" in done.stderr
    assert "Parse years before 1970" in done.stdout
    # It says where its scratch repo is, and removes it: nothing is left in the temp folder.
    [scratch] = [
        line.split(" in ", 1)[1].split(",")[0] for line in done.stdout.splitlines() if "A scratch repo in" in line
    ]
    assert f"Removed the scratch repo {scratch}" in done.stdout
    assert not Path(scratch).exists() and sorted(path.name for path in tmp_path.iterdir()) == ["bin"]


@pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bash") is None,
    reason="the tour needs git and bash: apt-get install git bash",
)
def test_the_tour_keeps_its_scratch_repo_when_asked(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "awf").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m awf "$@"\n')
    (bin_dir / "awf").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(tmp_path), "NO_COLOR": "1"}
    done = subprocess.run(
        ["bash", str(TOUR), "--keep"], env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [kept] = [path for path in tmp_path.iterdir() if path.name.startswith("awf-tour.")]
    assert f"The scratch repo is kept in {kept}" in done.stdout and (kept / "dates.py").exists()
