"""awf.testing leaves nothing in the temp folder: a passing test's run folders go, a failing one's stay, named."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = """
import awf
from awf.testing import run_workflow


@awf.workflow(name="tiny", description="One stage.")
async def tiny(wf):
    return await wf.stage("only", lambda: 1, result={"type": "integer"})


def test_passes():
    assert run_workflow(tiny).value == 1


def test_fails():
    assert run_workflow(tiny).value == 2
"""


def pytest_in(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    (folder / "test_tiny.py").write_text(textwrap.dedent(TESTS))
    temp = folder / "temp"
    temp.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_tiny.py", *args],
        cwd=folder,
        env={**os.environ, "TMPDIR": str(temp), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def made(folder: Path) -> list[Path]:
    return sorted(path for path in (folder / "temp").iterdir() if path.name.startswith("awf-test-"))


def test_a_passing_test_leaves_nothing_and_a_failing_one_keeps_its_folders_and_says_where(tmp_path: Path):
    done = pytest_in(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    [kept] = made(tmp_path)
    assert "awf.testing kept the run folders it made" in done.stdout and str(kept) in done.stdout
    assert (kept / "runs" / "tiny").is_dir()
    passing = pytest_in(tmp_path / "temp" / "..", "-k", "passes")
    assert passing.returncode == 0 and made(tmp_path) == [kept]  # the passing test left nothing
    assert "kept" not in passing.stdout


def test_asked_to_keep_them_it_keeps_every_folder(tmp_path: Path):
    done = pytest_in(tmp_path, "-k", "passes", env={"AWF_KEEP_TEST_RUNS": "1"})
    assert done.returncode == 0
    [kept] = made(tmp_path)
    assert str(kept) in done.stdout


def test_outside_pytest_the_folders_go_when_the_process_ends(tmp_path: Path):
    script = tmp_path / "once.py"
    script.write_text(textwrap.dedent(TESTS) + "\nprint(run_workflow(tiny).record_dir)\n")
    (tmp_path / "temp").mkdir()
    done = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "TMPDIR": str(tmp_path / "temp")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "awf-test-tiny-" in done.stdout and made(tmp_path) == []
