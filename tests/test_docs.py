"""The docs' examples run as written: files are written, `sh test` blocks run line by line.

In a page, a fenced block whose info string is `python file=NAME` (or `json file=NAME`) is a
file of the example; a block whose info string is `sh test` holds commands, each line run in
order in the example's folder. A line ending in `# exit N` must exit N; any other must exit 0.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S)
EXIT = re.compile(r"#\s*exit (\d+)")


def examples(page: Path) -> list[tuple[str, str, str]]:
    """(kind, name, text) for each runnable block of `page`, in order."""
    found = []
    for match in FENCE.finditer(page.read_text()):
        info = match["info"].strip().split()
        body = textwrap.dedent(match["body"])
        if len(info) == 2 and info[1].startswith("file="):
            found.append(("file", info[1].removeprefix("file="), body))
        elif info == ["sh", "test"]:
            found.append(("sh", "", body))
    return found


PAGES = sorted(page for page in DOCS.glob("*.md") if any(kind == "sh" for kind, _, _ in examples(page)))


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_pages_examples_run_as_written(page: Path, tmp_path: Path):
    env = {**os.environ, "NO_COLOR": "1", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = 0
    for kind, name, text in examples(page):
        if kind == "file":
            (tmp_path / name).write_text(text)
            continue
        for line in text.splitlines():
            command = line.split("#")[0].strip() if "# exit" in line or line.strip().startswith("#") else line.strip()
            if not command:
                continue
            expected = int(EXIT.search(line)[1]) if EXIT.search(line) else 0
            done = subprocess.run(
                command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
            )
            assert done.returncode == expected, f"{page.name}: {command}\n{done.stdout}\n{done.stderr}"
            ran += 1
    assert ran, f"{page.name} has no command that ran"


def test_every_concept_has_a_page():
    for name in (
        "runs",
        "stages",
        "durability",
        "redo",
        "start-part-way",
        "changing-code",
        "events",
        "agents",
        "cli",
        "panes",
        "cost",
    ):
        assert (DOCS / f"{name}.md").exists(), name
