"""Every harness keeps the same contract: the real `awf run`, the real CLI, the fake model server.

Each case runs on every harness in HARNESSES, headless and (where the harness states `pane`) in
a real tmux pane. The model's words are scripted; the CLI really runs the `awf answer` the model
asks for. Adding a harness to the suite is one line in HARNESSES (docs/harnesses.md).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_projects import AGAIN, PLAN, PROMPTS, CliProject, answer
from conftest import Result, finish, send
from fakemodel import FakeModel, Request, Silence, Status, Text, Usage, unused_port
from fakemodel.clis import CLAUDE, CODEX, FAKE_KEY, GEMINI, OPENCODE, PI, CliSetup
from panes_support import PaneProject, needs_tmux

from awf.agents.harness import Capabilities
from awf.agents.registry import own_harness


@dataclass(frozen=True)
class FreshHome:
    """What a sandboxed agent's fresh home holds of the CLI's home the operator gave awf (the test's
    CLI home): paths relative to each."""

    login: str  # a file of the CLI's login or settings, in the operator's CLI home, planted where absent
    copied: str  # where the fresh home has it
    history: str  # a file of the operator's own sessions or history, planted: it must stay out
    sessions: str  # a pattern of the agent's session files (or database) in the fresh home
    planted: str = '{"planted": "the operator\'s login"}\n'  # the login's text, where the test plants it


@dataclass(frozen=True)
class Subject:
    """A harness under test: its name, the fake model's dialect it speaks (tests/fakemodel/{dialect}.py),
    how its CLI is pointed at the fake model, and what its fresh home holds in a sandbox."""

    name: str
    dialect: str
    setup: CliSetup
    home: FreshHome
    # The tools of the model's own side that fetch from the web, which a sandboxed agent is not offered.
    web_tools: tuple[str, ...] = ()

    @property
    def capabilities(self) -> Capabilities:
        return own_harness(self.name).capabilities


HARNESSES = [
    Subject(
        "claude",
        "anthropic",
        CLAUDE,
        FreshHome(
            ".claude/.credentials.json",
            ".claude/.credentials.json",
            ".claude/projects/-elsewhere/earlier.jsonl",
            ".claude/projects/*/*.jsonl",
        ),
        web_tools=("WebSearch", "WebFetch"),
    ),
    Subject(
        "codex",
        "openai",
        CODEX,
        FreshHome(
            "auth.json",
            ".codex/auth.json",
            "history.jsonl",
            ".codex/sessions/*/*/*/rollout-*.jsonl",
            # An API key's login: a ChatGPT login's would have codex reach for chatgpt.com's apps.
            planted=f'{{"auth_mode": "apikey", "OPENAI_API_KEY": "{FAKE_KEY}"}}\n',
        ),
        web_tools=("web_search",),
    ),
    Subject(
        "gemini",
        "gemini",
        GEMINI,
        FreshHome(
            ".gemini/oauth_creds.json",
            ".gemini/oauth_creds.json",
            ".gemini/tmp/elsewhere/chats/session-earlier.jsonl",
            ".gemini/tmp/*/chats/session-*.jsonl",
        ),
        web_tools=("google_web_search", "web_fetch"),
    ),
    Subject(
        "pi",
        "anthropic",
        PI,
        FreshHome(
            ".pi/agent/models.json",
            ".pi/agent/models.json",
            ".pi/agent/sessions/--elsewhere--/earlier.jsonl",
            ".pi/agent/sessions/*/*.jsonl",
        ),
    ),
    Subject(
        "opencode",
        "anthropic",
        OPENCODE,
        FreshHome(
            ".local/share/opencode/auth.json",
            ".local/share/opencode/auth.json",
            ".local/state/opencode/prompt-history.jsonl",
            ".local/share/opencode/opencode.db",
        ),
    ),
]
# The genai-prices provider of each dialect's models.
PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "gemini": "google"}

# What a harness does not do yet, by (harness, placement, case): the case is expected to fail, and
# passing it fails the suite until the line goes.
KNOWN_GAPS = {
    ("claude", "pane", "api-error"): (
        "Claude Code in a pane writes the model's error to its session file as a reply of its own, which "
        "awf does not take for a failure: the turn is nudged, then unanswered"
    ),
    ("claude", "pane", "unreachable"): (
        "Claude Code in a pane retries a model it cannot reach under a countdown, so its screen never stays "
        "still for `idle`: the turn waits for its deadline"
    ),
    ("gemini", "pane", "api-error"): (
        "Gemini CLI in a pane shows a model call that failed on its screen only, and writes nothing of it to "
        "its session file: awf cannot tell it from a program at work"
    ),
    ("gemini", "pane", "unreachable"): (
        "Gemini CLI in a pane retries a model it cannot reach under a changing status, and retry_limit ends "
        "only a headless gemini: the turn waits for its deadline"
    ),
    ("codex", "pane", "unreachable"): (
        "Codex in a pane reconnects forever to a model it cannot reach, under a changing status, and "
        "reconnect_limit ends only a headless codex: the turn waits for its deadline"
    ),
}


# The turn's deadline where a case is a known gap: the turn fails by it, soon, and the suite goes on.
GAP_DEADLINE = 30
# The tokens the model reports for its two calls of a turn, where a case checks what is recorded.
ASKED, TOLD = Usage(input=1000, cached=200, output=50), Usage(input=300, cached=100, output=7)

pytestmark = pytest.mark.harnesses


class Agent(CliProject):
    """One harness, headless or in a pane, in a project whose `awf run` reaches its real CLI."""

    def __init__(self, root: Path, subject: Subject, pane: bool, model: FakeModel) -> None:
        runtime = {"harness": subject.name, **subject.setup.runtime}
        if pane:
            runtime.update(placement="pane", idle=20)
        project = PaneProject(root / "work")
        super().__init__(project, subject.setup, model.url, runtime=runtime, first_start=pane, flags=["--json"])
        self.subject = subject
        self.pane = pane

    def expect_gap(self, request: pytest.FixtureRequest, case: str) -> bool:
        """Mark this test as expected to fail where KNOWN_GAPS lists the case for this harness and
        placement; whether it does."""
        gap = KNOWN_GAPS.get((self.subject.name, "pane" if self.pane else "headless", case))
        if gap is not None:
            request.applymarker(pytest.mark.xfail(reason=gap, strict=True))
        return gap is not None

    def ended_cleanly(self, run_id: str) -> None:
        """Nothing of the run's agent is left running: its process groups, its pane, its workspace."""
        if self.pane:
            assert self.project.workspaces() == []
            groups = [entry["pid"] for entry in self.entries(run_id, "pane")]
        else:
            groups = [entry["pid"] for entry in self.entries(run_id, "agent-process")]
        assert groups and not [group for group in groups if group_alive(group)]


def placements() -> Iterator[Any]:
    for subject in HARNESSES:
        yield pytest.param((subject, False), id=f"{subject.name}-headless")
        if subject.capabilities.pane:
            yield pytest.param((subject, True), id=f"{subject.name}-pane", marks=needs_tmux)


@pytest.fixture(params=list(placements()))
def agent(request: pytest.FixtureRequest, tmp_path: Path, model: FakeModel) -> Iterator[Agent]:
    """Each harness, headless and in a pane."""
    subject, pane = request.param
    agent = Agent(tmp_path, subject, pane, model)
    try:
        yield agent
    finally:
        agent.project.end_server()


@pytest.fixture(params=[pytest.param(subject, id=subject.name) for subject in HARNESSES])
def headless(request: pytest.FixtureRequest, tmp_path: Path, model: FakeModel) -> Agent:
    """Each harness, headless."""
    return Agent(tmp_path, request.param, False, model)


def test_a_typed_answer_given_through_awf_answer_is_the_turns_value(agent: Agent, model: FakeModel) -> None:
    model.script(answer(PLAN), Text("Done."))
    done = agent.run("typed")

    assert done.code == 0, done.stderr
    assert done.out["value"] == [PLAN]
    assert not model.unscripted and not model.left
    [turn] = agent.turns("typed")
    assert (turn["outcome"], turn["by"], turn["nudged"]) == ("answered", "awf answer", False)
    assert turn["harness"] == agent.subject.name and turn["session"]
    first = model.conversation[0]
    assert first.api == agent.subject.dialect
    assert "Plan a fix for #212." in first.text() and "You plan fixes." in first.text()
    assert "awf answer" in first.text()
    if agent.pane:
        [pane] = agent.entries("typed", "pane")
        assert pane["workspace"] == "awf ask typed #1"
    agent.ended_cleanly("typed")


def test_an_answer_awf_answer_refuses_is_corrected_by_the_agent(agent: Agent, model: FakeModel) -> None:
    model.script(answer({"branch": 5}), answer(PLAN), Text("Done."))
    done = agent.run("corrected")

    assert done.code == 0, done.stderr
    assert done.out["value"] == [PLAN]
    # What `awf answer` said went back to the model as the command's output.
    told = model.conversation[1].text()
    assert "is not of type 'string'" in told and "'steps' is a required property" in told
    [turn] = agent.turns("corrected")
    assert (turn["outcome"], turn["nudged"]) == ("answered", False)


def test_an_answer_in_the_agents_last_message_counts_where_the_harness_reads_it(
    headless: Agent, model: FakeModel
) -> None:
    model.script(Text(json.dumps(PLAN)), answer(PLAN), Text("Done."))
    done = headless.run("in-output")

    assert done.code == 0, done.stderr
    assert done.out["value"] == [PLAN]
    [turn] = headless.turns("in-output")
    if headless.subject.capabilities.answer_in_output:
        assert (turn["by"], turn["nudged"]) == ("the agent's output", False)
    else:
        assert (turn["by"], turn["nudged"]) == ("awf answer", True)


def test_an_agent_that_stops_without_answering_gets_the_recovery_prompt(agent: Agent, model: FakeModel) -> None:
    model.script(Text("I looked at the parser."), answer(PLAN), Text("Done."))
    done = agent.run("recovered")

    assert done.code == 0, done.stderr
    assert done.out["value"] == [PLAN]
    [turn] = agent.turns("recovered")
    assert (turn["outcome"], turn["by"], turn["nudged"]) == ("answered", "awf answer", True)
    recovery = model.conversation[1].text()
    assert "You stopped without giving awf your answer" in recovery
    if agent.subject.capabilities.sessions:
        assert "I looked at the parser." in recovery  # the same session: the model sees its own words
        assert turn["session"]


def test_the_clis_own_api_error_fails_the_turn_in_its_words(
    agent: Agent, model: FakeModel, request: pytest.FixtureRequest
) -> None:
    gap = agent.expect_gap(request, "api-error")
    model.script(Status(401, "invalid x-api-key", times=None))
    done = agent.run("refused", timeout=GAP_DEADLINE if gap else 90)

    assert done.code == 3, done.stderr  # the workflow stops on the failed turn
    [turn] = agent.turns("refused")
    assert (turn["outcome"], turn["nudged"]) == ("failed", False)
    assert turn["reason"].startswith(agent.subject.name) and "401" in turn["reason"], turn["reason"]
    assert turn["reason"] in done.stderr
    agent.ended_cleanly("refused")


def test_a_server_error_fails_the_turn_in_the_clis_words(headless: Agent, model: FakeModel) -> None:
    model.script(Status(500, "the fake model broke", times=None))
    done = headless.run("broken")

    assert done.code == 3, done.stderr
    [turn] = headless.turns("broken")
    assert (turn["outcome"], turn["nudged"]) == ("failed", False)
    assert turn["reason"].startswith(headless.subject.name) and turn["reason"] in done.stderr


def test_a_model_that_cannot_be_reached_fails_the_turn_long_before_its_deadline(
    agent: Agent, request: pytest.FixtureRequest
) -> None:
    # A CLI can take half a minute to start on a loaded machine (opencode does), so the deadline is
    # far off, but for a known gap, which waits for it.
    deadline = GAP_DEADLINE if agent.expect_gap(request, "unreachable") else 120
    agent.point_at(f"http://127.0.0.1:{unused_port()}")
    done = agent.run("unreachable", timeout=deadline)

    assert done.code == 3, done.stderr
    [turn] = agent.turns("unreachable")
    assert turn["outcome"] == "failed" and turn["reason"].startswith(agent.subject.name), turn["reason"]
    assert turn["seconds"] < deadline / 2
    agent.ended_cleanly("unreachable")


def test_a_second_turn_resumes_the_agents_session(agent: Agent, model: FakeModel) -> None:
    model.script(answer(PLAN), Text("First plan given."), answer(AGAIN), Text("Second plan given."))
    done = agent.run("twice", turns=2)

    assert done.code == 0, done.stderr
    assert done.out["value"] == [PLAN, AGAIN]
    first, second = agent.turns("twice")
    later = next(request.text() for request in model.conversation if PROMPTS[1] in request.text())
    if agent.subject.capabilities.sessions:
        assert first["session"] and first["session"] == second["session"] and second["turn"] == 2
        assert PROMPTS[0] in later and "First plan given." in later
    if agent.pane:
        # The next turn was typed into the same program, in the same pane: it was started once.
        assert len(agent.entries("twice", "pane")) == 1
    agent.ended_cleanly("twice")


def test_ctrl_c_mid_turn_cancels_the_turn_and_ends_the_clis_processes(agent: Agent, model: FakeModel) -> None:
    model.script(Silence())
    process = agent.start("interrupted")
    deadline = time.monotonic() + 90
    while not model.conversation:
        assert time.monotonic() < deadline, "the CLI never asked the model"
        time.sleep(0.05)
    send(process)
    done = finish(process, timeout=60)

    assert done.code == 130, done.stderr
    [turn] = agent.turns("interrupted")
    assert turn["outcome"] == "cancelled"
    agent.ended_cleanly("interrupted")


def test_a_turns_tokens_and_cost_are_recorded(agent: Agent, model: FakeModel) -> None:
    model.script(answer(PLAN, ASKED), Text("Done.", usage=TOLD))
    done = agent.run("costed")

    assert done.code == 0, done.stderr
    costed_as_scripted(agent, model, done, agent.turn("costed"))


def test_a_sandboxed_agent_answers_with_only_its_login_in_a_fresh_home(
    agent: Agent, model: FakeModel, request: pytest.FixtureRequest
) -> None:
    gap = agent.expect_gap(request, "sandboxed")
    paths = agent.subject.home
    own = agent.home / paths.login
    if not own.exists():
        own.parent.mkdir(parents=True, exist_ok=True)
        own.write_text(paths.planted)
    history = agent.home / paths.history
    history.parent.mkdir(parents=True, exist_ok=True)
    history.write_text('{"text": "OPERATORS-OWN-HISTORY"}\n')
    model.script(answer(PLAN, ASKED), Text("Done.", usage=TOLD))
    done = agent.run("sandboxed", flags=["--sandbox", "workspace"], timeout=GAP_DEADLINE if gap else 90)

    assert done.code == 0, done.stderr
    assert done.out["value"] == [PLAN]
    turn = agent.turn("sandboxed")
    assert (turn["outcome"], turn["by"]) == ("answered", "awf answer")
    folder = agent.project.run_dir("ask", "sandboxed") / "agents" / "1" / "planner"
    if agent.pane:
        # The pane's launcher starts it confined.
        assert "sandbox/launch.py" in (folder.parent / ".panes" / "planner.sh").read_text()
    else:
        processes = agent.entries("sandboxed", "agent-process")
        assert processes and all(entry["command"][-2].endswith("sandbox/launch.py") for entry in processes)
        assert all(json.loads(entry["command"][-1])["bwrap"].endswith("bwrap") for entry in processes)
    home = folder / "home"
    assert (home / paths.copied).read_text() == own.read_text()
    assert not any(b"OPERATORS-OWN-HISTORY" in file.read_bytes() for file in home.rglob("*") if file.is_file())
    assert list(home.glob(paths.sessions)), f"no session of the agent's in its fresh home ({paths.sessions})"
    recorded = [
        entry["session_file"]
        for entry in agent.entries("sandboxed", "turn-start") + agent.entries("sandboxed", "session")
    ]
    assert all(Path(file).is_relative_to(home) for file in recorded if file), recorded
    assert not offered_tools(model.conversation[0]) & set(agent.subject.web_tools)
    costed_as_scripted(agent, model, done, turn)
    agent.ended_cleanly("sandboxed")


def costed_as_scripted(agent: Agent, model: FakeModel, done: Result, turn: dict[str, Any]) -> None:
    """The turn's usage holds the tokens of ASKED and TOLD and the model, and its cost as the harness states."""
    usage = turn["usage"]
    # `input` counts the whole prompt, the cached part with it.
    assert (usage["input"], usage["cached"], usage["output"]) == (1300 + 300, 300, 57), usage
    assert usage["model"] == requested_model(model.conversation[0])
    cost = agent.subject.capabilities.cost
    if cost == "priced":
        assert turn["cost"] == pytest.approx(
            priced(agent.subject.dialect, usage["model"], ASKED) + priced(agent.subject.dialect, usage["model"], TOLD)
        )
    if cost is not None:
        assert isinstance(turn["cost"], float) and turn["cost"] > 0
        [totals] = [line for line in done.stderr.splitlines() if line.strip().startswith("totals:")]
        assert "1 turn · $" in totals


def offered_tools(request: Request) -> set[str]:
    """The names of the tools a request offers the model, in any dialect: a function's name, or the
    type of a tool the model's side runs (codex's web_search)."""
    body = request.body if isinstance(request.body, dict) else {}
    names = set()
    for tool in body.get("tools") or []:
        names.add(tool.get("name") or tool.get("type"))
        names.update(declared["name"] for declared in tool.get("functionDeclarations") or [])
    return names


def requested_model(request: Request) -> str:
    """The model a request asks for: in its body, or in its path (/v1beta/models/{model}:...)."""
    if isinstance(request.body, dict) and request.body.get("model"):
        return str(request.body["model"])
    return request.path.split("/models/", 1)[1].split(":", 1)[0]


def priced(dialect: str, model: str, usage: Usage) -> float:
    """What genai-prices says `usage` of `model` costs."""
    provider = PROVIDERS[dialect]
    from genai_prices import Usage as Priced
    from genai_prices import calc_price

    tokens = Priced(input_tokens=usage.input + usage.cached, cache_read_tokens=usage.cached, output_tokens=usage.output)
    return float(calc_price(tokens, model_ref=model, provider_id=provider).total_price)


def group_alive(pgid: int) -> bool:
    """Whether any process of the group `pgid` is still running (a zombie is not)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return any(_pgid(pid) == pgid and _state(pid) not in ("Z", "X") for pid in os.listdir("/proc") if pid.isdigit())


def _stat(pid: str) -> list[str]:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return text[text.rfind(")") + 2 :].split()


def _pgid(pid: str) -> int | None:
    fields = _stat(pid)
    return int(fields[2]) if len(fields) > 2 else None


def _state(pid: str) -> str | None:
    fields = _stat(pid)
    return fields[0] if fields else None
