"""What only the opencode runtime does, end to end: the real `awf run`, the real opencode, the fake
model server. The behaviour every harness shares is in the conformance suite (tests/harnesses)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from cli_projects import PLAN, CliProject, answer
from conftest import Project
from fakemodel import FakeModel, Shell, Status, Text
from fakemodel.clis import OPENCODE

RUNTIME = {"harness": "opencode", "model": "anthropic/claude-sonnet-4-5"}

pytestmark = pytest.mark.harnesses


def configure(opencode: CliProject, change: Callable[[dict[str, Any]], Any]) -> None:
    """Change the user's opencode.json: `change(config)` edits it in place."""
    config_file = opencode.home / ".config" / "opencode" / "opencode.json"
    config = json.loads(config_file.read_text())
    change(config)
    config_file.write_text(json.dumps(config))


def test_awf_lets_opencode_run_awf_answer_and_no_other_command_the_users_rules_ask_about(
    project: Project, model: FakeModel
) -> None:
    opencode = CliProject(project, OPENCODE, model.url, runtime=RUNTIME)
    configure(opencode, lambda config: config.update(permission={"bash": "ask"}))
    model.script(Shell("touch escaped"), answer(PLAN), Text("Done."))
    done = opencode.run("rules")

    assert done.code == 0, done.stderr
    assert not (project.path / "escaped").exists()  # asked about, so refused: headless, no one answers
    turn = opencode.turn("rules")
    assert (turn["outcome"], turn["by"], turn["nudged"]) == ("answered", "awf answer", True)


def test_the_instructions_open_the_sessions_first_prompt_and_effort_is_opencodes_variant(
    project: Project, model: FakeModel
) -> None:
    opencode = CliProject(project, OPENCODE, model.url, runtime=RUNTIME)
    model.script(answer(PLAN), Text("Done."))
    done = opencode.run("effort", {**RUNTIME, "effort": "high"})

    assert done.code == 0, done.stderr
    first = json.dumps(model.conversation[0].body["messages"][0])
    assert first.index("You plan fixes.") < first.index("Plan a fix for #212.")
    [process] = opencode.entries("effort", "agent-process")
    assert process["command"][-4:] == ["--model", "anthropic/claude-sonnet-4-5", "--variant", "high"]


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (404, 'opencode does not know anthropic/claude-sonnet-4-5: check the runtime\'s "model"'),
        (429, "the model's API is rate-limiting this key: wait, or use another model or key"),
    ],
)
def test_a_model_not_found_or_a_rate_limit_fails_the_turn_saying_so(
    project: Project, model: FakeModel, code: int, words: str
) -> None:
    opencode = CliProject(project, OPENCODE, model.url, runtime=RUNTIME)
    model.script(Status(code, f"the fake says {code}", times=None))
    done = opencode.run(f"refused-{code}", {**RUNTIME, "retry_limit": 3})

    assert done.code == 3, done.stderr
    turn = opencode.turn(f"refused-{code}")
    assert turn["outcome"] == "failed" and turn["reason"].startswith("opencode"), turn["reason"]
    assert f"the fake says {code}" in turn["reason"] and words in turn["reason"]


def test_a_model_opencode_does_not_know_fails_the_turn_in_its_words(project: Project, model: FakeModel) -> None:
    opencode = CliProject(project, OPENCODE, model.url, runtime=RUNTIME)
    done = opencode.run("unknown-model", {**RUNTIME, "model": "anthropic/claude-nine"})

    assert done.code == 3, done.stderr
    reason = opencode.turn("unknown-model")["reason"]
    assert reason.startswith("opencode: ProviderModelNotFoundError: Model not found: anthropic/claude-nine.")
    assert 'opencode does not know anthropic/claude-nine: check the runtime\'s "model"' in reason
    assert not model.conversation


def test_a_model_named_without_its_provider_is_refused_when_the_agent_is_opened(
    project: Project, model: FakeModel
) -> None:
    opencode = CliProject(project, OPENCODE, model.url, runtime=RUNTIME)
    done = opencode.run("no-provider", {**RUNTIME, "model": "claude-sonnet-4-5"})

    assert done.code != 0
    assert '"model" is opencode\'s "provider/model" ("anthropic/claude-sonnet-4-5")' in done.stderr
    assert not model.requests


def test_opencode_without_a_key_fails_the_turn_saying_to_log_in(project: Project, model: FakeModel) -> None:
    opencode = CliProject(project, OPENCODE, model.url, runtime=RUNTIME)
    configure(opencode, lambda config: config["provider"]["anthropic"]["options"].pop("apiKey"))
    done = opencode.run("login")

    assert done.code == 3, done.stderr
    reason = opencode.turn("login")["reason"]
    assert reason.startswith("opencode is not logged in to anthropic: run `opencode auth login`")
    assert "opencode said: Anthropic API key is missing." in reason
    assert not model.conversation


def test_an_option_opencode_does_not_know_names_the_version_awf_is_tested_with(
    project: Project, model: FakeModel
) -> None:
    opencode = CliProject(project, OPENCODE, model.url, runtime=RUNTIME)
    done = opencode.run("unknown", {**RUNTIME, "extra_args": ["--no-such-option"]})

    assert done.code == 3, done.stderr
    reason = opencode.turn("unknown")["reason"]
    assert "(opencode 1.18.33) does not know an option awf gives it: update it to 1.18.33 or newer" in reason


def test_a_missing_opencode_fails_the_turn_naming_the_npm_package(project: Project, model: FakeModel) -> None:
    opencode = CliProject(project, OPENCODE, model.url, runtime=RUNTIME)
    project.env["PATH"] = str(project.path / "bin") + ":/usr/bin:/bin"
    done = opencode.run("missing")

    assert done.code == 3, done.stderr
    reason = opencode.turn("missing")["reason"]
    assert reason == (
        "opencode: opencode is not installed: it is not on PATH. Install opencode "
        "(npm install -g opencode-ai), or set AWF_OPENCODE to its path"
    )
    assert "npm install -g opencode-ai" in done.stderr and "Traceback" not in done.stderr
