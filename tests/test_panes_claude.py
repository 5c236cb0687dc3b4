"""What only `claude` does in a tmux pane, against the fake model: in a sandbox, it starts from a
fresh config whose first-start questions awf answers. What every harness does in a pane is the
conformance suite's (tests/harnesses).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_projects import AGAIN, PLAN, CliProject, answer
from fakemodel import FakeModel, Text
from fakemodel.clis import CLAUDE
from panes_support import PaneProject, needs_tmux, pane_project

pytestmark = [needs_tmux, pytest.mark.harnesses]  # real CLIs: CI's harness step

IN_PANE = {"harness": "claude", "placement": "pane", "idle": 20}


@pytest.fixture
def panes(tmp_path: Path) -> Iterator[PaneProject]:
    yield from pane_project(tmp_path / "work")


def test_claude_in_a_pane_in_a_sandbox_starts_from_a_fresh_config_and_answers(
    panes: PaneProject, model: FakeModel
) -> None:
    # A first start (nothing answered in its config): the sandbox's config answers its questions.
    claude = CliProject(panes, CLAUDE, model.url, runtime=IN_PANE)
    model.script(answer(PLAN), Text("Done."), answer(AGAIN), Text("Done again."))
    done = claude.run("s1", flags=["--sandbox", "workspace", "--json"], turns=2)

    assert done.code == 0, done.stderr
    assert done.out["value"] == [PLAN, AGAIN]
    agent_dir = panes.run_dir("ask", "s1") / "agents" / "1" / "planner"
    assert "sandbox/launch.py" in (agent_dir.parent / ".panes" / "planner.sh").read_text()
    assert list((agent_dir / "home" / ".claude").glob("projects/*/*.jsonl")), "its transcript is in the fresh config"
    assert not (claude.home / ".claude").exists()
