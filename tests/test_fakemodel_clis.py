"""The real agent CLIs against the fake model server: what they send, print and do.

These pin down the behaviour the harnesses rely on (events, ids, usage, exit codes, error texts,
resume), so a new CLI version that changes it fails here first.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel, Shell, Silence, Status, Text, Tool, Usage, unused_port
from fakemodel.clis import (
    base_env,
    claude_env,
    codex_config,
    codex_env,
    gemini_env,
    opencode_env,
    pi_env,
    require,
    write_gemini_settings,
)

pytestmark = pytest.mark.harnesses  # real CLIs: CI's harness step


@dataclass
class Ran:
    code: int
    events: list[dict[str, Any]]
    stderr: str

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event.get("type") == kind]


def run(argv: list[str], env: dict[str, str], cwd: Path, prompt: str, timeout: float = 60) -> Ran:
    """Run a CLI in a session of its own (as awf does) and read its JSON lines."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(prompt, timeout=timeout)
    except subprocess.TimeoutExpired:
        # codex is a node launcher around a native program: only the group takes both down.
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return Ran(process.returncode, events, stderr)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


# -- claude -------------------------------------------------------------------------------------


def claude(
    model_url: str, tmp_path: Path, work: Path, prompt: str, *options: str, env: dict[str, str] | None = None
) -> Ran:
    program = require("claude")
    env = {**base_env(), **claude_env(model_url, tmp_path / "claude-home"), **(env or {})}
    (tmp_path / "claude-home").mkdir(exist_ok=True)
    return run([program, "-p", "--output-format", "stream-json", "--verbose", *options], env, work, prompt)


def test_claude_answers_in_text(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Text("Hello from the fake model", usage=Usage(input=200, cached=50, output=7)))
    ran = claude(
        model.url,
        tmp_path,
        work,
        "Say hello.",
        "--append-system-prompt",
        "AWF-INSTRUCTIONS",
        "--model",
        "claude-sonnet-4-5",
    )

    assert ran.code == 0, ran.stderr
    init, result = ran.events[0], ran.of("result")[-1]
    assert init["type"] == "system" and init["subtype"] == "init"
    assert init["session_id"] == result["session_id"]
    assert result["is_error"] is False and result["subtype"] == "success"
    assert result["result"] == "Hello from the fake model"
    assert result["usage"]["input_tokens"] == 200
    assert result["usage"]["cache_read_input_tokens"] == 50
    assert result["usage"]["output_tokens"] == 7
    assert result["modelUsage"]["claude-sonnet-4-5"]["costUSD"] == pytest.approx(result["total_cost_usd"])
    assert result["total_cost_usd"] > 0
    [request] = model.conversation
    assert request.body["model"] == "claude-sonnet-4-5" and request.body["stream"] is True
    assert "Say hello." in request.text() and "AWF-INSTRUCTIONS" in request.text()
    assert request.headers["x-api-key"] == "sk-fake-model-key"


def test_claude_runs_a_shell_command_it_is_allowed(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Shell("touch made-by-claude && echo touched", say="Making the file."), Text("Done."))
    ran = claude(model.url, tmp_path, work, "Make the file.", "--allowedTools", "Bash(touch:*)")

    assert ran.code == 0, ran.stderr
    assert (work / "made-by-claude").exists()
    [tool_result] = [
        block for event in ran.of("user") for block in event["message"]["content"] if block.get("type") == "tool_result"
    ]
    assert tool_result["is_error"] is False and "touched" in str(tool_result["content"])
    second = model.conversation[1]
    assert "touched" in second.text()
    assert ran.of("result")[-1]["num_turns"] == 2


def test_claude_asks_before_a_command_it_is_not_allowed(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Shell("touch not-allowed"), Text("Could not."))
    ran = claude(model.url, tmp_path, work, "Make the file.")

    assert ran.code == 0, ran.stderr
    assert not (work / "not-allowed").exists()
    [tool_result] = [
        block for event in ran.of("user") for block in event["message"]["content"] if block.get("type") == "tool_result"
    ]
    assert tool_result["is_error"] is True and "needs approval" in str(tool_result["content"])


def test_claude_resumes_its_session(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Text("first answer ALPHA"), Text("second answer"))
    first = claude(model.url, tmp_path, work, "first prompt")
    session = first.of("result")[-1]["session_id"]
    second = claude(model.url, tmp_path, work, "second prompt", "--resume", session)

    assert second.code == 0, second.stderr
    assert second.of("result")[-1]["session_id"] == session
    later = model.conversation[1]
    assert "first prompt" in later.text() and "first answer ALPHA" in later.text()
    transcripts = list((tmp_path / "claude-home" / ".claude" / "projects").glob(f"*/{session}.jsonl"))
    assert len(transcripts) == 1
    # On a resumed session `usage` is this run's, while `modelUsage` and `total_cost_usd` add up the
    # whole session; `model_usage_since_last_result` holds this run's cost per model.
    result = second.of("result")[-1]
    assert result["usage"]["input_tokens"] == 120
    [model_usage] = result["modelUsage"].values()
    assert model_usage["inputTokens"] == 240
    [this_run] = result["model_usage_since_last_result"].values()
    assert this_run["inputTokens"] == 120
    assert this_run["costUSD"] == pytest.approx(result["total_cost_usd"] / 2)


@pytest.mark.parametrize(
    ("code", "message", "words"),
    [
        (401, "invalid x-api-key", "Invalid API key · Fix external API key"),  # Anthropic's own 401 text
        (401, "refused by the fake model", "Failed to authenticate. API Error: 401 refused by the fake model"),
        (500, "the fake model broke", "API Error: 500 the fake model broke."),
    ],
)
def test_claude_reports_a_refusing_server(
    model: FakeModel, tmp_path: Path, work: Path, code: int, message: str, words: str
) -> None:
    model.script(Status(code, message, times=None))
    ran = claude(model.url, tmp_path, work, "Say hello.")

    assert ran.code == 1
    [retry] = [e for e in ran.of("system") if e.get("subtype") == "api_retry"]  # CLAUDE_CODE_MAX_RETRIES=1
    assert retry["error_status"] == code
    result = ran.of("result")[-1]
    assert result["is_error"] is True and result["api_error_status"] == code
    assert words in result["result"]
    assert result["total_cost_usd"] == 0


def test_claude_gives_up_on_a_silent_server(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Silence(), Silence())
    ran = claude(model.url, tmp_path, work, "Say hello.", env={"API_TIMEOUT_MS": "1000"})

    assert ran.code == 1
    result = ran.of("result")[-1]
    assert result["is_error"] is True and result["api_error_status"] is None
    assert "timed out" in result["result"].lower()


def test_claude_without_a_key_says_to_log_in(tmp_path: Path, work: Path) -> None:
    program = require("claude")
    home = tmp_path / "claude-home"
    home.mkdir()
    env = {**base_env(), **claude_env(f"http://127.0.0.1:{unused_port()}", home)}
    del env["ANTHROPIC_API_KEY"]
    ran = run([program, "-p", "--output-format", "stream-json", "--verbose"], env, work, "hi")

    assert ran.code == 1
    result = ran.of("result")[-1]
    assert result["is_error"] is True and "/login" in result["result"]


def test_claude_refuses_an_unknown_option(tmp_path: Path, work: Path) -> None:
    program = require("claude")
    ran = run([program, "-p", "--no-such-option"], base_env(), work, "hi")
    assert ran.code != 0 and "unknown option" in ran.stderr


# -- codex --------------------------------------------------------------------------------------


def codex(  # noqa: PLR0913 — each keyword is an option of the codex command line the test runs
    model_url: str,
    tmp_path: Path,
    work: Path,
    prompt: str,
    *options: str,
    after: tuple[str, ...] = (),
    retries: int = 1,
    idle_ms: int = 20000,
    timeout: float = 60,
) -> Ran:
    program = require("codex")
    home = tmp_path / "codex-home"
    home.mkdir(exist_ok=True)
    # Codex makes its sandbox helper only outside the temp folder: a TMPDIR that does not hold the
    # home lets it, so commands run where bubblewrap is installed (awf does the same).
    scratch = tmp_path / "codex-tmp"
    scratch.mkdir(exist_ok=True)
    env = {**base_env(), **codex_env(home), "TMPDIR": str(scratch)}
    config = codex_config(model_url, retries=retries, idle_ms=idle_ms)
    argv = [program, "exec", "--json", "--skip-git-repo-check", *config, *options, *after]
    return run(argv, env, work, prompt, timeout=timeout)


def test_codex_answers_in_text(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Text("Hello from the fake model", usage=Usage(input=200, cached=50, output=7)))
    ran = codex(model.url, tmp_path, work, "Say hello.")

    assert ran.code == 0, ran.stderr
    [started] = ran.of("thread.started")
    assert re.fullmatch(r"[0-9a-f-]{36}", started["thread_id"])
    [message] = [e["item"] for e in ran.of("item.completed") if e["item"]["type"] == "agent_message"]
    assert message["text"] == "Hello from the fake model"
    [completed] = ran.of("turn.completed")
    # input_tokens counts the cached ones too, as the Responses API does.
    assert completed["usage"]["input_tokens"] == 250
    assert completed["usage"]["cached_input_tokens"] == 50
    assert completed["usage"]["output_tokens"] == 7
    [request] = model.conversation
    assert "Say hello." in request.text()
    assert request.headers["authorization"] == "Bearer sk-fake-model-key"
    sessions = list((tmp_path / "codex-home" / "sessions").glob(f"*/*/*/rollout-*-{started['thread_id']}.jsonl"))
    assert len(sessions) == 1


@pytest.mark.parametrize("model_name", [None, "gpt-5.5"], ids=["code-mode", "exec_command"])
def test_codex_runs_a_shell_command(model: FakeModel, tmp_path: Path, work: Path, model_name: str | None) -> None:
    model.script(Shell("touch made-by-codex && echo touched"), Text("Done."))
    options = ["--sandbox", "workspace-write", *(["-m", model_name] if model_name else [])]
    ran = codex(model.url, tmp_path, work, "Make the file.", *options)

    assert ran.code == 0, ran.stderr
    assert (work / "made-by-codex").exists()
    [command] = [e["item"] for e in ran.of("item.completed") if e["item"]["type"] == "command_execution"]
    assert command["exit_code"] == 0 and "touched" in command["aggregated_output"]
    assert "touch made-by-codex" in command["command"]
    assert "touched" in model.conversation[1].text()


def test_codex_resumes_its_thread(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Text("first answer ALPHA", usage=Usage(100, 20, 10)), Text("second answer", usage=Usage(150, 50, 7)))
    first = codex(model.url, tmp_path, work, "first prompt")
    thread = first.of("thread.started")[0]["thread_id"]
    second = codex(model.url, tmp_path, work, "second prompt", after=("resume", thread))

    assert second.code == 0, second.stderr
    assert second.of("thread.started")[0]["thread_id"] == thread
    later = model.conversation[1]
    assert "first prompt" in later.text() and "first answer ALPHA" in later.text()
    # turn.completed counts the whole thread: the second turn's own tokens are the difference.
    assert first.of("turn.completed")[0]["usage"]["input_tokens"] == 120
    usage = second.of("turn.completed")[0]["usage"]
    assert (usage["input_tokens"], usage["cached_input_tokens"], usage["output_tokens"]) == (320, 70, 17)


def test_codex_reports_a_401(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Status(401, "Incorrect API key provided", times=None))
    ran = codex(model.url, tmp_path, work, "Say hello.", retries=0)

    assert ran.code == 1
    [failed] = ran.of("turn.failed")
    assert "401 Unauthorized: Incorrect API key provided" in failed["error"]["message"]
    assert len(model.conversation) == 1  # with request_max_retries=0 and stream_max_retries=0


def test_codex_reports_a_500_in_its_own_words(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Status(500, "the fake model broke", times=None))
    ran = codex(model.url, tmp_path, work, "Say hello.", retries=0)

    assert ran.code == 1
    [failed] = ran.of("turn.failed")
    # Codex replaces a 5xx body with its own sentence about demand.
    assert "the fake model broke" not in failed["error"]["message"]
    assert "high demand" in failed["error"]["message"]


def watch(argv: list[str], env: dict[str, str], cwd: Path, prompt: str, seconds: float) -> tuple[list[dict], bool]:
    """Start a CLI, read its events for `seconds`, then end its process group: (events, still running)."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(prompt.encode())
    process.stdin.close()
    events, buffer = [], b""
    deadline = time.monotonic() + seconds
    try:
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([process.stdout], [], [], left)
            if not readable:
                continue
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            events += [json.loads(line) for line in lines if line.startswith(b"{")]
        running = process.poll() is None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stdout.close()
    return events, running


def test_codex_keeps_reconnecting_when_the_server_is_down(tmp_path: Path, work: Path) -> None:
    program = require("codex")
    (tmp_path / "codex-home").mkdir()
    argv = [
        program,
        "exec",
        "--json",
        "--skip-git-repo-check",
        *codex_config(f"http://127.0.0.1:{unused_port()}", retries=0),
    ]
    events, running = watch(argv, {**base_env(), **codex_env(tmp_path / "codex-home")}, work, "hi", seconds=6)

    assert running, "codex gave up on its own"
    errors = [e["message"] for e in events if e["type"] == "error"]
    assert errors and all(m.startswith("Reconnecting... waiting for network (Connection failed") for m in errors)
    assert not [e for e in events if e["type"] in ("turn.failed", "turn.completed")]


def test_codex_waits_forever_on_a_silent_server(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Silence(), Silence())
    program = require("codex")
    (tmp_path / "codex-home").mkdir()
    argv = [program, "exec", "--json", "--skip-git-repo-check", *codex_config(model.url, idle_ms=1000)]
    events, running = watch(argv, {**base_env(), **codex_env(tmp_path / "codex-home")}, work, "hi", seconds=4)

    # The idle timeout starts only once a stream has begun: no answer at all is waited for without end.
    assert running
    assert [e["type"] for e in events] == ["thread.started", "turn.started"]


def test_codex_gives_up_on_a_stream_gone_quiet(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Silence(started=True), Silence(started=True))
    ran = codex(model.url, tmp_path, work, "hi", retries=0, idle_ms=1000)

    assert ran.code == 1
    [failed] = ran.of("turn.failed")
    assert "idle timeout waiting for SSE" in failed["error"]["message"]


# -- pi -----------------------------------------------------------------------------------------


def pi(
    model_url: str, tmp_path: Path, work: Path, prompt: str, *options: str, env: dict[str, str] | None = None
) -> Ran:
    program = require("pi")
    env = {**base_env(), **pi_env(model_url, tmp_path / "pi-home"), **(env or {})}
    return run([program, "-p", "--mode", "json", "--model", "claude-sonnet-4-5", *options], env, work, prompt)


def pi_replies(ran: Ran) -> list[dict[str, Any]]:
    return [e["message"] for e in ran.of("message_end") if e["message"]["role"] == "assistant"]


def test_pi_names_its_session_first_and_prices_each_reply(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Text("Hello from the fake model", usage=Usage(input=200, cached=50, output=7)))
    file = tmp_path / "named.jsonl"
    ran = pi(model.url, tmp_path, work, "Say hello.", "--session", str(file), "--append-system-prompt", "AWF-SYS")

    assert ran.code == 0, ran.stderr
    header = ran.events[0]
    assert header["type"] == "session" and header["cwd"] == str(work)
    [reply] = pi_replies(ran)
    assert reply["stopReason"] == "stop" and reply["content"] == [{"type": "text", "text": "Hello from the fake model"}]
    usage = reply["usage"]
    # pi's `input` leaves out the cached tokens; its own price of the call is in `cost`.
    assert (usage["input"], usage["cacheRead"], usage["cacheWrite"], usage["output"]) == (200, 50, 0, 7)
    assert usage["cost"]["total"] > 0
    [request] = model.conversation
    assert "AWF-SYS" in json.dumps(request.body["system"]) and "Say hello." in request.text()
    # The session file is the one named, its header the id pi printed first.
    first = json.loads(file.read_text().splitlines()[0])
    assert first == header


def test_pi_goes_on_with_the_session_of_a_file_it_wrote(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Text("first answer ALPHA"), Text("second answer"))
    file = tmp_path / "named.jsonl"
    first = pi(model.url, tmp_path, work, "first prompt", "--session", str(file))
    second = pi(model.url, tmp_path, work, "second prompt", "--session", str(file))

    assert second.code == 0, second.stderr
    assert second.events[0]["id"] == first.events[0]["id"]
    later = model.conversation[1]
    assert "first prompt" in later.text() and "first answer ALPHA" in later.text()


def test_pi_ends_a_refused_call_with_an_error_reply_and_exit_0(model: FakeModel, tmp_path: Path, work: Path) -> None:
    model.script(Status(401, "invalid x-api-key", times=None))
    ran = pi(model.url, tmp_path, work, "Say hello.")

    assert ran.code == 0, ran.stderr
    last = pi_replies(ran)[-1]
    assert last["stopReason"] == "error"
    status, _, body = last["errorMessage"].partition(" ")
    assert status == "401" and json.loads(body)["error"]["message"] == "invalid x-api-key"


def test_pi_retries_an_unreachable_model_a_bounded_number_of_times(tmp_path: Path, work: Path) -> None:
    ran = pi(f"http://127.0.0.1:{unused_port()}", tmp_path, work, "Say hello.")

    assert ran.code == 0, ran.stderr
    assert [e["attempt"] for e in ran.of("auto_retry_start")] == [1]  # retry.maxRetries is 1 in pi_env
    assert [r["errorMessage"] for r in pi_replies(ran)] == ["Connection error."] * 2
    [given_up] = ran.of("auto_retry_end")
    assert given_up["success"] is False


@pytest.mark.parametrize(
    ("options", "unset", "words"),
    [
        (["--no-such-option"], None, "Error: Unknown option: --no-such-option"),
        (["--model", "claude-nine"], None, 'Error: Model "claude-nine" not found.'),
        ([], "ANTHROPIC_API_KEY", "No API key found for the selected model."),
    ],
)
def test_pi_says_what_stops_it_before_a_call_on_stderr(
    tmp_path: Path, work: Path, options: list[str], unset: str | None, words: str
) -> None:
    program = require("pi")
    env = {**base_env(), **pi_env(f"http://127.0.0.1:{unused_port()}", tmp_path / "pi-home")}
    env.pop(unset or "", None)
    ran = run([program, "-p", "--mode", "json", *options], env, work, "hi")

    assert ran.code == 1
    assert words in ran.stderr


# -- no other host ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "pi", "opencode"])
def test_the_cli_reaches_no_host_but_the_fake_model(model: FakeModel, tmp_path: Path, work: Path, name: str) -> None:
    program = require(name)
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed: apt-get install strace")
    model.script(Shell("echo hi"), Text("Done."))
    trace = tmp_path / "connect.txt"
    home = tmp_path / "home"
    home.mkdir()
    if name == "claude":
        env = {**base_env(), **claude_env(model.url, home)}
        argv = [program, "-p", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash(echo:*)"]
    elif name == "gemini":
        env = {**base_env(), **gemini_env(model.url, home)}
        write_gemini_settings(home)
        policy = tmp_path / "policy.toml"
        policy.write_text(
            '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "echo"\ndecision = "allow"\npriority = 900\n'
        )
        # No model named: its router's side request is made too.
        argv = [program, "-p", "", "-o", "stream-json", "--skip-trust", "--policy", str(policy)]
    elif name == "pi":
        # Its Anthropic provider at the fake model's address, a model it prices, offline.
        env = {**base_env(), **pi_env(model.url, home)}
        argv = [program, "-p", "--mode", "json", "--model", "claude-sonnet-4-5"]
    elif name == "opencode":
        # Its built-in catalog and its Anthropic provider, the model sent to the fake model; its
        # own npm install of its plugin SDK already done.
        env = {**base_env(), **opencode_env(model.url, home)}
        argv = [program, "run", "--format", "json"]
    else:
        env = {**base_env(), **codex_env(home)}
        argv = [program, "exec", "--json", "--skip-git-repo-check", *codex_config(model.url), "-s", "workspace-write"]
    ran = run([strace, "-f", "-qq", "-e", "trace=connect", "-o", str(trace), *argv], env, work, "hi")

    assert ran.code == 0, ran.stderr
    peers = set(re.findall(r"sin6?_port=htons\((\d+)\), sin6?_addr=inet_addr\(\"([^\"]+)\"\)", trace.read_text()))
    assert peers == {(str(model.port), "127.0.0.1")}


def test_claude_returns_structured_output_for_a_json_schema(model: FakeModel, tmp_path: Path, work: Path) -> None:
    schema = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    model.script(Tool("StructuredOutput", {"name": "fix-42"}), Text("Done."))
    ran = claude(model.url, tmp_path, work, "Name the branch.", "--json-schema", json.dumps(schema))

    assert ran.code == 0, ran.stderr
    assert ran.of("result")[-1]["structured_output"] == {"name": "fix-42"}
    offered = {tool["name"]: tool for tool in model.conversation[0].body["tools"]}
    assert offered["StructuredOutput"]["input_schema"] == schema
