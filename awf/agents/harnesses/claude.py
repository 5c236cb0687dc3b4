"""The `claude` runtime: Claude Code (`claude -p`), headless, one process a delivery.

    runtime="claude"                      # {"harness": "claude"}: the model "sonnet"
    runtime={"harness": "claude", "model": "opus", "effort": "high",
             "permission_mode": "acceptEdits", "extra_args": ["--add-dir", "../shared"]}

A delivery runs `claude -p --output-format stream-json --verbose` in the agent's cwd with the
message on stdin, the agent's instructions as an appended system prompt, and permission to run
`awf answer` (`--allowedTools "Bash(awf answer:*)"`), on top of whatever the permission mode and
the user's own Claude Code settings allow. The session id comes from the stream; the next
delivery of the agent (the recovery prompt, the next turn) resumes it with `--resume`.

Tokens and cost come from the stream's result line: Claude Code prices its own use. On a resumed
session that line's `total_cost_usd` counts the whole session, so a delivery's cost is what
`model_usage_since_last_result` says (or the difference from the last delivery's total).

awf names the session as it starts it (`--session-id`), so each turn records where its session
file is before the agent does anything: a turn cut short before the result line (a crash, a
cancel, a timeout) is counted from that file by the next attempt (usage_claude). In a pane, where
nothing prints a result line, the session file is what ends the turn and gives its tokens.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from ...record.files import is_file, write_atomic
from ..harness import Capabilities, Message, PaneProgram, Session, Stopped
from ..headless import Ran, copy_private, run_delivery
from ..kit import AgentCli, turn_usage
from ..output import size_of
from ..sandbox.wrap import endpoint_of
from . import claude_usage as usage_claude

DEFAULT_MODEL = "sonnet"  # Claude Code's name for its latest Sonnet
TESTED_VERSION = "2.1.332"
VARIABLE = "AWF_CLAUDE"
INSTALL = "Install Claude Code (npm install -g @anthropic-ai/claude-code)"
ANSWER_RULE = "Bash(awf answer:*)"
EFFORTS = ("low", "medium", "high", "xhigh", "max")
_PROMPT_BOX = re.compile(r"^\s*❯(?!\s*\d+\.)", re.M)
WEB_TOOLS = ("WebSearch", "WebFetch")
DEFAULT_API = "https://api.anthropic.com"
CREDENTIALS = ".credentials.json"  # where Claude Code keeps its login on Linux
# What a sandboxed Claude Code keeps of the environment: its key, its model's address, its settings.
PASSED_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_")
PASSED = ("API_TIMEOUT_MS", "MAX_THINKING_TOKENS", "BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS")


class ClaudeHarness(AgentCli):
    name = "claude"
    capabilities: ClassVar[Capabilities] = Capabilities(
        sessions=True,
        answer_in_output=True,
        tokens=True,
        cost="reported",
        session_file=True,
        pane=True,
        pane_finish=True,
        sandbox_login=True,
    )
    program = "claude"
    variable = VARIABLE
    install = INSTALL
    tested_version = TESTED_VERSION
    default_model: ClassVar[str | None] = DEFAULT_MODEL
    models = 'a model\'s name or alias ("sonnet", "opus", "claude-sonnet-4-5")'
    efforts: ClassVar[tuple[str, ...] | str] = EFFORTS
    answer_hint: ClassVar[str | None] = (
        "In Claude Code, pass the answer as one argument: awf answer '<the answer>' (quote it for the shell). "
        "The permission awf gives you covers that form; a here-document or a pipe is refused."
    )
    # After `awf answer`, Claude Code writes its last words and the result line (tokens, cost).
    answer_grace: ClassVar[float] = 10.0
    pane_answer_hint: ClassVar[str | None] = answer_hint
    # In a pane, after `awf answer`, Claude Code writes its last words to its session file, which
    # ends the turn with its tokens.
    pane_answer_grace: ClassVar[float] = 10.0

    def options_problem(self, runtime: dict[str, Any]) -> str | None:
        mode = runtime.get("permission_mode")
        if mode is not None and (not isinstance(mode, str) or not mode):
            return f'"permission_mode" is a Claude Code permission mode ("acceptEdits", "plan", ...), not {mode!r}'
        return None

    def sandbox_home(self, session: Session, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """A fresh CLAUDE_CONFIG_DIR holding only the login (.credentials.json), and the ANTHROPIC_,
        CLAUDE_CODE_ and DISABLE_ settings of the environment (an API key, a base URL)."""
        config = home / ".claude"
        config.mkdir(mode=0o700, exist_ok=True)
        given = env.get("CLAUDE_CONFIG_DIR")
        own = Path(given).expanduser() if given else Path(env.get("HOME") or Path.home()).expanduser() / ".claude"
        copy_private(own / CREDENTIALS, config / CREDENTIALS)
        passed = {key: value for key, value in env.items() if key.startswith(PASSED_PREFIXES) or key in PASSED}
        passed.pop("CLAUDE_CONFIG_DIR", None)
        _first_start(config, session, passed.get("ANTHROPIC_API_KEY"))
        return {**passed, "CLAUDE_CONFIG_DIR": str(config)}

    def endpoints(self, session: Session, env: Mapping[str, str]) -> list[str]:
        endpoint = endpoint_of(env.get("ANTHROPIC_BASE_URL") or DEFAULT_API)
        return [endpoint] if endpoint else []

    async def deliver(self, session: Session, message: Message) -> Stopped:
        program, problem = self.find(message.env)
        if program is None:
            return Stopped(failed=problem)
        ran = await run_delivery(session, message, self.command(program, session, message.env), message.text)
        init = next((e for e in ran.of("system") if e.get("subtype") == "init"), None)
        results = ran.of("result")
        session_id = (results[-1] if results else init or {}).get("session_id")
        if isinstance(session_id, str) and session_id:
            session.id = session_id
        if not results:
            return Stopped(failed=self.broke(program, ran))
        result = results[-1]
        usage, cost = _account(session, message, result, init)
        if result.get("is_error"):
            return Stopped(failed=_error_reason(result, ran), usage=usage, cost=cost)
        structured = result.get("structured_output")
        text = json.dumps(structured) if structured is not None else result.get("result")
        return Stopped(text=text if isinstance(text, str) else None, usage=usage, cost=cost)

    def command(self, program: str, session: Session, env: Mapping[str, str]) -> list[str]:
        command = [program, "-p", "--output-format", "stream-json", "--verbose", *self._options(session)]
        return command + self._session_options(session, env) + self.extra_args(session)

    def _session_options(self, session: Session, env: Mapping[str, str]) -> list[str]:
        """Resume the agent's session once Claude Code has written it; else start it, named by awf."""
        file = self.session_file(session, env)
        if session.id and file is not None and is_file(file):
            return ["--resume", session.id]
        self.name_session(session)
        assert session.id is not None
        return ["--session-id", session.id]

    def name_session(self, session: Session) -> None:
        session.id = session.id or str(uuid.uuid4())

    def session_file(self, session: Session, env: Mapping[str, str]) -> Path | None:
        if session.sandbox is not None:
            env = {**env, **session.sandbox.env}  # its own config folder, where its sessions are
        return usage_claude.session_file(env, session.cwd, session.id) if session.id else None

    def session_usage(self, path: Path, start: int, end: int | None) -> dict[str, Any]:
        return usage_claude.read_usage(path, start, end).as_record(usage_claude.PROVIDER)

    def pane_command(self, session: Session, env: Mapping[str, str]) -> PaneProgram:
        """Claude Code's own terminal UI, for "placement": "pane". The session is named as it starts,
        so a program started again after it exited resumes the conversation."""
        program = self.find(env)[0] or "claude"
        command = [program, *self._options(session), *self._session_options(session, env)]
        return PaneProgram(command + self.extra_args(session), ready=_takes_input)

    def pane_watch(self, session: Session, message: Message) -> _Finished | None:
        file = self.session_file(session, message.env)
        return _Finished(session, message, file) if file is not None else None

    def unknown_option(self, stderr: str) -> bool:
        return "unknown option" in stderr

    def pane_text(self, session: Session, message: Message, fresh: bool) -> str:
        # The instructions are its system prompt, and a resumed session has the turn's prompt.
        return message.text

    def _options(self, session: Session) -> list[str]:
        runtime = session.runtime
        command = ["--allowedTools", ANSWER_RULE]
        if session.sandbox is not None:
            # Searched and fetched by the model's side, past the sandbox's network allowlist.
            command += ["--disallowedTools", *WEB_TOOLS]
        model = self.model(session)
        if model:
            command += ["--model", model]
        if runtime.get("effort"):
            command += ["--effort", runtime["effort"]]
        if runtime.get("permission_mode"):
            command += ["--permission-mode", runtime["permission_mode"]]
        if session.instructions:
            command += ["--append-system-prompt", session.instructions]
        return command


def _first_start(config: Path, session: Session, key: str | None) -> None:
    """The answers to Claude Code's first-start questions in a fresh config, which its terminal UI
    would otherwise ask in a pane: onboarding done, the agent's folder trusted (the sandbox is the
    boundary), and the API key awf passed on approved."""
    answers: dict[str, Any] = {
        "hasCompletedOnboarding": True,
        "projects": {str(session.cwd): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
    }
    if key:
        answers["customApiKeyResponses"] = {"approved": [key[-20:]], "rejected": []}
    write_atomic(config / ".claude.json", json.dumps(answers))


class _Finished:
    """The `pane_watch` of Claude Code: its session file shows a reply that ends the model's turn,
    after the message was pasted. The tokens are the turn's so far; the cost, this delivery's."""

    def __init__(self, session: Session, message: Message, file: Path) -> None:
        self.file = file
        self.offset: int = size_of(file)
        if session.data.get("pane_turn") != message.turn:
            session.data["pane_turn"], session.data["pane_turn_offset"] = message.turn, self.offset
        self.turn_offset: int = session.data["pane_turn_offset"]
        self.model: str | None = session.model

    def __call__(self) -> Stopped | None:
        try:
            if not usage_claude.finished(self.file, self.offset):
                return None
            turn = usage_claude.read_usage(self.file, self.turn_offset)
            delivery = usage_claude.read_usage(self.file, self.offset)
        except OSError:
            return None
        cost, why, _ = delivery.priced(usage_claude.PROVIDER)
        models = list(turn.by_model)
        model = models[0] if len(models) == 1 else self.model
        return Stopped(usage=turn_usage(model, turn.tokens, models=models, cost_unknown=why), cost=cost)


def _takes_input(screen: str) -> bool:
    """Its prompt box is up: a line starting with ❯, not a choice in a dialog (❯ 1. Yes)."""
    return _PROMPT_BOX.search(screen) is not None


def _error_reason(result: dict[str, Any], ran: Ran) -> str:
    said = str(result.get("result") or "").strip() or "; ".join(map(str, result.get("errors") or [])) or "an error"
    if "/login" in said or "not logged in" in said.lower():
        return f"claude is not logged in: run `claude` and /login, or set ANTHROPIC_API_KEY (Claude Code said: {said})"
    status = result.get("api_error_status")
    return f"claude: {said}" + (f" (HTTP {status} from the model's API)" if status and str(status) not in said else "")


def _account(
    session: Session, message: Message, result: dict[str, Any], init: dict[str, Any] | None
) -> tuple[dict[str, Any], float | None]:
    """This turn's tokens so far (all its deliveries) and this delivery's cost."""
    given = result.get("usage")
    raw: dict[str, Any] = given if isinstance(given, dict) else {}
    fresh, read, write, out = (
        _int(raw.get(key))
        for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")
    )
    tokens = {"input": fresh + read + write, "cached": read, "cache_write": write, "output": out}
    data = session.data
    if data.get("turn") == message.turn:
        tokens = {key: value + data["tokens"].get(key, 0) for key, value in tokens.items()}
    data["turn"], data["tokens"] = message.turn, tokens

    since = result.get("model_usage_since_last_result")
    total = result.get("total_cost_usd")
    cost: float | None = None
    if isinstance(since, dict):
        cost = sum(float(each.get("costUSD") or 0.0) for each in since.values() if isinstance(each, dict))
    elif isinstance(total, (int, float)):
        cost = max(float(total) - data.get("session_cost", 0.0), 0.0)
    if isinstance(total, (int, float)):
        data["session_cost"] = float(total)

    models = [name for name in (since if isinstance(since, dict) else result.get("modelUsage") or {})]
    model = models[0] if len(models) == 1 else (init or {}).get("model") or session.runtime.get("model")
    why = "Claude Code's result line gave no cost" if cost is None else None
    return turn_usage(model, tokens, models=models, cost_unknown=why), cost


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


HARNESS = ClaudeHarness
