"""The README's test command says what a fresh machine skips, and each skip says how to install what it lacks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_says_what_plain_pytest_skips_and_the_one_command_that_runs_everything():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("Run the tests:", 1)[1].split("## ", 1)[0]
    assert "python -m pytest" in section and "skips" in section
    for tool in ("claude", "codex", "tmux", "faketime", "bubblewrap", "strace", "Ray"):
        assert tool in section, tool
    assert "```\n.ci/run\n```" in section
    ci = (ROOT / ".ci" / "run").read_text()
    assert "install-agent-clis" in ci and "apt-get install" in ci and "python -m pytest" in ci


def test_every_skip_names_what_is_missing_and_how_to_install_it():
    reasons = []
    for path in ROOT.joinpath("tests").rglob("*.py"):
        text = path.read_text()
        reasons += re.findall(r'reason=(f?"[^"]*")', text)
        reasons += re.findall(r'pytest\.skip\(\s*(f?"[^"]*")', text)
    assert reasons
    for reason in reasons:
        assert "install" in reason, reason


def test_a_real_cli_test_skips_saying_how_to_install_the_cli(tmp_path: Path):
    clis = ROOT / "tests" / "test_fakemodel_clis.py"
    plain_path = os.pathsep.join(
        part for part in os.environ["PATH"].split(os.pathsep) if not (Path(part) / "claude").exists()
    )
    env = {key: value for key, value in os.environ.items() if key not in ("AWF_CLAUDE", "AWF_CODEX")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rs",
            "-p",
            "no:cacheprovider",
            str(clis),
            "-m",
            "harnesses",
            "-k",
            "reaches_no_host and claude",
        ],
        cwd=ROOT,
        env={**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{plain_path}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "1 skipped" in done.stdout, done.stdout + done.stderr
    assert "the real claude CLI is not installed: export PATH=" in done.stdout
    assert ".ci/install-agent-clis .cache/agent-clis" in done.stdout
