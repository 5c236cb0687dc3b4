"""Harnesses from packages of their own, found by their entry points; and each CLI harness's
tested version is the version CI installs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import Project

from awf.agents.registry import own_harness

ROOT = Path(__file__).resolve().parent.parent

# The plugin docs/harnesses.md shows, so the page is kept true.
PLUGIN = re.search(
    r"```python\n# awf_echo/__init__.py[^\n]*\n(.*?)```", (ROOT / "docs" / "harnesses.md").read_text(), re.DOTALL
)[1]

WORKFLOW = """
import awf

HEARD = {"type": "object", "required": ["heard"], "properties": {"heard": {"type": "string"}}}


@awf.workflow(name="plug", description="An agent on a harness a package adds.")
async def plug(wf):
    async def ask():
        agent = await wf.agents.open(key="listener", runtime="HARNESS")
        turn = await agent.run(prompt="hello there", schema=HEARD)
        return turn.outcome.value

    await wf.stage("ask", ask, result=HEARD)
"""


def install(site: Path, package: str, entry: str, source: str) -> None:
    """What pip leaves in site-packages for a package: its module, and a .dist-info folder whose
    entry_points.txt names the harness."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(source)
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[awf.harnesses]\n{entry}\n")


@pytest.fixture
def site(project: Project, tmp_path: Path) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    project.env["PYTHONPATH"] = str(folder)
    return folder


def test_a_harness_an_installed_package_adds_runs_agents_like_awfs_own(project: Project, site: Path) -> None:
    install(site, "awf_echo", "echo = awf_echo:HARNESS", PLUGIN)
    project.write("plug.py", WORKFLOW.replace("HARNESS", "echo"))

    done = project.awf("run", "plug.py", "--id", "p1")

    assert done.code == 0, done.stderr
    assert project.stage("plug", "p1", "ask")["value"] == {"heard": "hello there"}
    [turn] = [line for line in project.log("plug", "p1") if line["kind"] == "turn"]
    assert (turn["agent"], turn["outcome"]) == ("listener", "answered")


@pytest.mark.parametrize(
    ("entry", "source", "said"),
    [
        ("echo = awf_echo:HARNESS", "raise ImportError('needs numpy')", "cannot be loaded: ImportError: needs numpy"),
        ("echo = awf_echo:HARNESS", "HARNESS = 42", "is not a Harness"),
        ("echo = awf_echo:HARNESS", PLUGIN.replace('name = "echo"', 'name = "shout"'), "is named 'shout'"),
        (
            "echo = awf_echo:HARNESS",
            PLUGIN.replace("pane=False,", "pane=True,"),
            "does not keep its word: the echo harness states pane but does not define pane_command",
        ),
    ],
)
def test_a_plugin_that_cannot_serve_fails_the_turn_naming_its_package(
    project: Project, site: Path, entry: str, source: str, said: str
) -> None:
    install(site, "awf_echo", entry, source)
    project.write("plug.py", WORKFLOW.replace("HARNESS", "echo"))

    done = project.awf("run", "plug.py", "--id", "p1")

    assert done.code == 1
    assert "the harness 'echo' of package awf-echo 0.1 (awf_echo:HARNESS)" in done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr


def test_a_harness_no_package_adds_is_refused_naming_the_ones_there_are(project: Project, site: Path) -> None:
    install(site, "awf_echo", "echo = awf_echo:HARNESS", PLUGIN)
    project.write("plug.py", WORKFLOW.replace("HARNESS", "whisper"))

    done = project.awf("run", "plug.py", "--id", "p1")

    assert done.code == 1
    assert "there is no harness named 'whisper'" in done.stderr
    assert "echo, exec" in done.stderr  # the plugin's among awf's own


def test_each_cli_harness_is_tested_with_the_version_ci_installs() -> None:
    script = (ROOT / ".ci" / "install-agent-clis").read_text()
    pins = {program: version for _, version, program in re.findall(r'^\s+"(\S+) (\S+) (\S+)"$', script, re.MULTILINE)}
    assert set(pins) == {"claude", "codex", "gemini", "opencode", "pi"}
    for program, version in pins.items():
        assert getattr(own_harness(program), "tested_version", None) == version, program
