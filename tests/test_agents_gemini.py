"""What only the gemini runtime does, end to end: the real `awf run`, the real Gemini CLI, the fake
model server. The behaviour every harness shares is in the conformance suite (tests/harnesses)."""

from __future__ import annotations

import time

import pytest
from cli_projects import CliProject
from conftest import Project
from fakemodel import FakeModel, Status, unused_port
from fakemodel.clis import GEMINI, write_gemini_settings

RUNTIME = {"harness": "gemini", "model": "gemini-2.5-flash"}

pytestmark = pytest.mark.harnesses


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (404, "the model's API does not know gemini-2.5-flash: check the runtime's \"model\""),
        (429, "the model's API is rate-limiting this key"),
    ],
)
def test_a_model_not_found_or_a_rate_limit_fails_the_turn_saying_so(
    project: Project, model: FakeModel, code: int, words: str
) -> None:
    gemini = CliProject(project, GEMINI, model.url, runtime=RUNTIME)
    model.script(Status(code, f"the fake says {code}", times=None))
    done = gemini.run(f"refused-{code}")

    assert done.code == 3, done.stderr
    turn = gemini.turn(f"refused-{code}")
    assert turn["outcome"] == "failed" and turn["reason"].startswith("gemini: ")
    assert f"the fake says {code}" in turn["reason"] and words in turn["reason"]


def test_a_model_that_cannot_be_reached_ends_the_turn_after_the_retry_limit(project: Project) -> None:
    # Gemini CLI's own ten attempts, with waits of up to 30 s: awf ends it long before.
    gemini = CliProject(project, GEMINI, f"http://127.0.0.1:{unused_port()}", runtime=RUNTIME)
    write_gemini_settings(gemini.home, attempts=10)
    started = time.monotonic()
    done = gemini.run("down", {**RUNTIME, "retry_limit": 3})

    assert done.code == 3, done.stderr
    turn = gemini.turn("down")
    assert turn["outcome"] == "failed"
    assert turn["reason"].startswith("gemini cannot get an answer from its model: it kept retrying for 3 s")
    assert "fetch failed" in turn["reason"]
    assert time.monotonic() - started < 150


def test_gemini_without_a_key_fails_the_turn_saying_to_log_in(project: Project, model: FakeModel) -> None:
    gemini = CliProject(project, GEMINI, model.url, runtime=RUNTIME)
    del project.env["GEMINI_API_KEY"]
    done = gemini.run("login")

    assert done.code == 3, done.stderr
    turn = gemini.turn("login")
    assert turn["outcome"] == "failed"
    assert turn["reason"].startswith("gemini is not logged in: run `gemini` once to log in, or set GEMINI_API_KEY")
    assert "you must specify the GEMINI_API_KEY environment variable" in turn["reason"]
    assert not model.conversation


def test_an_option_gemini_does_not_know_names_the_version_awf_is_tested_with(
    project: Project, model: FakeModel
) -> None:
    gemini = CliProject(project, GEMINI, model.url, runtime=RUNTIME)
    done = gemini.run("unknown", {**RUNTIME, "extra_args": ["--no-such-option"]})

    assert done.code == 3, done.stderr
    reason = gemini.turn("unknown")["reason"]
    assert "(gemini 0.61.0) does not know an option awf gives it: update it to 0.61.0 or newer" in reason


def test_a_missing_gemini_fails_the_turn_naming_the_npm_package(project: Project, model: FakeModel) -> None:
    gemini = CliProject(project, GEMINI, model.url, runtime=RUNTIME)
    project.env["PATH"] = str(project.path / "bin") + ":/usr/bin:/bin"
    done = gemini.run("missing")

    assert done.code == 3, done.stderr
    reason = gemini.turn("missing")["reason"]
    assert reason == (
        "gemini: gemini is not installed: it is not on PATH. Install Gemini CLI "
        "(npm install -g @google/gemini-cli), or set AWF_GEMINI to its path"
    )
    assert "npm install -g @google/gemini-cli" in done.stderr and "Traceback" not in done.stderr


def test_effort_is_refused_as_gemini_has_none(project: Project, model: FakeModel) -> None:
    gemini = CliProject(project, GEMINI, model.url, runtime=RUNTIME)
    done = gemini.run("effort", {**RUNTIME, "effort": "high"})

    assert done.code != 0
    assert '"effort" is not an option of Gemini CLI' in done.stderr
    assert not model.requests
