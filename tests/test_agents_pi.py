"""What only the pi runtime does, end to end: the real `awf run`, the real pi, the fake model
server. The behaviour every harness shares is in the conformance suite (tests/harnesses)."""

from __future__ import annotations

import json

import pytest
from cli_projects import PLAN, CliProject, answer
from conftest import Project
from fakemodel import FakeModel, Status, Text
from fakemodel.clis import PI

from awf.agents.harnesses import pi_usage as usage_pi

RUNTIME = {"harness": "pi", "model": "claude-sonnet-4-5"}

pytestmark = pytest.mark.harnesses


def test_the_session_is_pis_own_in_a_file_awf_names_in_pis_folder_of_sessions(
    project: Project, model: FakeModel
) -> None:
    pi = CliProject(project, PI, model.url, runtime=RUNTIME)
    model.script(answer(PLAN), Text("Done."))
    done = pi.run("session")

    assert done.code == 0, done.stderr
    turn = pi.turn("session")
    path = usage_pi.find_session(project.env, project.path, turn["session"])
    assert path is not None and path.parent == usage_pi.sessions_dir(project.env, project.path)
    assert path.name.endswith(".jsonl") and "_awf-" in path.name
    # Recorded as soon as awf saw pi write it (unless the turn was over first).
    recorded = {e.get("session_file") for e in project.log("ask", "session") if e["kind"] in ("turn-start", "session")}
    assert recorded <= {None, str(path)}
    # What the file says the turn used is what the turn recorded, pi's price with it.
    used = usage_pi.read_usage(path)
    assert used.calls == 2 and used.cost == pytest.approx(turn["cost"])
    assert used.tokens["input"] == turn["usage"]["input"]


def test_the_instructions_are_appended_to_pis_system_prompt_and_effort_is_its_thinking_level(
    project: Project, model: FakeModel
) -> None:
    pi = CliProject(project, PI, model.url, runtime=RUNTIME)
    model.script(answer(PLAN), Text("Done."))
    done = pi.run("effort", {**RUNTIME, "effort": "off"})

    assert done.code == 0, done.stderr
    first = model.conversation[0].body
    assert "You plan fixes." in json.dumps(first["system"])
    assert "You plan fixes." not in json.dumps(first["messages"])
    assert first["thinking"] == {"type": "disabled"}


def test_an_effort_pi_does_not_take_is_refused_when_the_agent_is_opened(project: Project, model: FakeModel) -> None:
    pi = CliProject(project, PI, model.url, runtime=RUNTIME)
    done = pi.run("bad-effort", {**RUNTIME, "effort": "max"})

    assert done.code != 0
    assert "\"effort\" is one of off, minimal, low, medium, high, xhigh, not 'max'" in done.stderr
    assert not model.requests


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (404, "the model's API does not know claude-sonnet-4-5: check the runtime's \"model\""),
        (429, "the model's API is rate-limiting this key: wait, or use another model or key"),
    ],
)
def test_a_model_not_found_or_a_rate_limit_fails_the_turn_saying_so(
    project: Project, model: FakeModel, code: int, words: str
) -> None:
    pi = CliProject(project, PI, model.url, runtime=RUNTIME)
    model.script(Status(code, f"the fake says {code}", times=None))
    done = pi.run(f"refused-{code}")

    assert done.code == 3, done.stderr
    turn = pi.turn(f"refused-{code}")
    assert turn["outcome"] == "failed" and turn["reason"].startswith(f"pi: the fake says {code} (HTTP {code} ")
    assert words in turn["reason"]


def test_a_model_pi_does_not_know_fails_the_turn_before_any_call(project: Project, model: FakeModel) -> None:
    pi = CliProject(project, PI, model.url, runtime=RUNTIME)
    done = pi.run("unknown-model", {**RUNTIME, "model": "claude-nine"})

    assert done.code == 3, done.stderr
    reason = pi.turn("unknown-model")["reason"]
    assert reason.startswith('pi does not know the model claude-nine: check the runtime\'s "model"')
    assert 'pi said: Error: Model "claude-nine" not found' in reason
    assert not model.conversation


def test_pi_without_a_key_fails_the_turn_saying_to_log_in(project: Project, model: FakeModel) -> None:
    pi = CliProject(project, PI, model.url, runtime=RUNTIME)
    del project.env["ANTHROPIC_API_KEY"]
    done = pi.run("login")

    assert done.code == 3, done.stderr
    reason = pi.turn("login")["reason"]
    assert reason.startswith("pi is not logged in to its model's provider: set the provider's API key")
    assert "pi said: No API key found for anthropic." in reason
    assert not model.conversation


def test_an_option_pi_does_not_know_names_the_version_awf_is_tested_with(project: Project, model: FakeModel) -> None:
    pi = CliProject(project, PI, model.url, runtime=RUNTIME)
    done = pi.run("unknown", {**RUNTIME, "extra_args": ["--no-such-option"]})

    assert done.code == 3, done.stderr
    reason = pi.turn("unknown")["reason"]
    assert "(pi 0.73.1) does not know an option awf gives it: update it to 0.73.1 or newer" in reason
    assert "Unknown option: --no-such-option" in reason


def test_a_missing_pi_fails_the_turn_naming_the_npm_package(project: Project, model: FakeModel) -> None:
    pi = CliProject(project, PI, model.url, runtime=RUNTIME)
    project.env["PATH"] = str(project.path / "bin") + ":/usr/bin:/bin"
    done = pi.run("missing")

    assert done.code == 3, done.stderr
    reason = pi.turn("missing")["reason"]
    assert reason == (
        "pi: pi is not installed: it is not on PATH. Install pi "
        "(npm install -g @mariozechner/pi-coding-agent), or set AWF_PI to its path"
    )
    assert "npm install -g @mariozechner/pi-coding-agent" in done.stderr and "Traceback" not in done.stderr
