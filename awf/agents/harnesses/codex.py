"""The `codex` runtime: the Codex CLI (`codex exec`), headless, one process a delivery; or in a pane.

    runtime="codex"                       # {"harness": "codex"}: DEFAULT_MODEL, workspace-write
    runtime={"harness": "codex", "model": "gpt-5.5", "effort": "high", "sandbox": "read-only",
             "extra_args": ["-c", "model_verbosity=\"low\""], "reconnect_limit": 60}

A delivery runs `codex exec --json --skip-git-repo-check` in the agent's cwd with the message on
stdin, the sandbox the runtime asks for (default workspace-write, with the agent's folder in the
run's record writable too, so `awf answer` can write there), `--model`, and the agent's
instructions as developer instructions on the thread's first delivery. The thread id comes from
`thread.started`; the next delivery resumes it (`codex exec [options] resume ID`).

Codex reports tokens, not cost: `turn.completed` counts the whole thread, so a delivery's tokens
are the difference from the last one's; awf prices them with genai-prices (a model it has no
price for gets a cost of null and the reason why).

Codex never gives up on a model it cannot reach: it prints "Reconnecting..." and tries again,
forever. A delivery that has only reconnected for `reconnect_limit` seconds (default 30) is ended,
and the turn fails with codex's own words.

With "placement": "pane", the agent is Codex's terminal UI (`codex` with the same options, started
once, each message pasted into it; see panes.py). Its status line shows the thread's id, which awf
reads off the screen; a codex started again in its pane resumes that thread (`codex [options]
resume ID`). Its session file ($CODEX_HOME/sessions/.../rollout-...-ID.jsonl) says when a turn is
complete, why it failed, and the thread's tokens, so a pane turn has its tokens and cost too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from ...record.files import read_bytes
from ..harness import Capabilities, Message, PaneProgram, Session, Stopped
from ..headless import JsonLines, copy_private, run_delivery
from ..kit import AgentCli, turn_usage
from ..output import size_of
from ..sandbox.wrap import endpoint_of
from ..usage import price
from . import codex_usage as usage_codex

DEFAULT_MODEL = "gpt-6.1-sol"
TESTED_VERSION = "0.171.0"
VARIABLE = "AWF_CODEX"
INSTALL = "Install the Codex CLI (npm install -g @openai/codex)"
SANDBOXES = ("read-only", "workspace-write", "danger-full-access")
AUTH, CONFIG = "auth.json", "config.toml"
PASSED = ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
OPENAI_ENDPOINTS = ("api.openai.com:443", "chatgpt.com:443")  # an API key's API, and a ChatGPT login's
DEFAULT_SANDBOX = "workspace-write"
RECONNECT_LIMIT = 30.0
# In a pane: the thread's id first on the status line, where awf reads it; then what codex shows by default.
STATUS_LINE = ("thread-id", "model-with-reasoning", "current-dir")
# Seconds the input box may be up without the thread's id before awf goes on without it: codex draws
# the box a second or so before the status line that has the id, and later on a loaded machine.
ID_WAIT = 10.0
_RESUMED = "pane_resumed"  # the key in session.data: the program in the pane resumed the thread
_INPUT_BOX = re.compile(r"^\s*›(?!\s*\d+\.)", re.M)
_THREAD_ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


class CodexHarness(AgentCli):
    name = "codex"
    capabilities: ClassVar[Capabilities] = Capabilities(
        sessions=True,
        answer_in_output=True,
        tokens=True,
        cost="priced",
        session_file=True,
        pane=True,
        pane_finish=True,
        sandbox_login=True,
    )
    program = "codex"
    variable = VARIABLE
    install = INSTALL
    tested_version = TESTED_VERSION
    default_model: ClassVar[str | None] = DEFAULT_MODEL
    models = "a model's name (\"gpt-5.5\"), or null for codex's own default"
    efforts: ClassVar[tuple[str, ...] | str] = 'a reasoning effort ("low", "medium", "high")'
    # After `awf answer`, codex writes its last message and turn.completed (the tokens); in a pane,
    # task_complete in its session file.
    answer_grace: ClassVar[float] = 10.0
    pane_answer_grace: ClassVar[float] = 10.0

    def options_problem(self, runtime: dict[str, Any]) -> str | None:
        sandbox = runtime.get("sandbox", DEFAULT_SANDBOX)
        if sandbox not in SANDBOXES:
            return f'"sandbox" is one of {", ".join(SANDBOXES)}, not {sandbox!r}'
        limit = runtime.get("reconnect_limit", RECONNECT_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0:
            return f'"reconnect_limit" is a number of seconds above zero, not {limit!r}'
        return None

    def sandbox_home(self, session: Session, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """A fresh CODEX_HOME holding only the login (auth.json) and the settings (config.toml, which
        names the model provider), none of the sessions, history or logs; and the environment's
        OpenAI key, base URL, and the key variables the providers name (env_key)."""
        config = home / ".codex"
        config.mkdir(mode=0o700, exist_ok=True)
        own = usage_codex.home(env)
        for name in (AUTH, CONFIG):
            copy_private(own / name, config / name)
        names = {*PASSED, *_provider_keys(_settings(own, session.runtime))}
        return {**{name: env[name] for name in sorted(names) if name in env}, "CODEX_HOME": str(config)}

    def endpoints(self, session: Session, env: Mapping[str, str]) -> list[str]:
        settings = _settings(usage_codex.home(env), session.runtime)
        providers = settings.get("model_providers")
        provider = providers.get(settings.get("model_provider") or "openai") if isinstance(providers, dict) else None
        base = provider.get("base_url") if isinstance(provider, dict) else None
        if isinstance(base, str) or env.get("OPENAI_BASE_URL"):
            endpoint = endpoint_of(base if isinstance(base, str) else env["OPENAI_BASE_URL"])
            return [endpoint] if endpoint else []
        return list(OPENAI_ENDPOINTS)

    async def deliver(self, session: Session, message: Message) -> Stopped:
        program, problem = self.find(message.env)
        if program is None:
            return Stopped(failed=problem)
        reconnects = _Reconnects(float(session.runtime.get("reconnect_limit", RECONNECT_LIMIT)))

        def watch(event: dict[str, Any] | None) -> str | None:
            # The thread is known as it starts, so the turn records where its session file is.
            if event is not None and event.get("type") == "thread.started" and isinstance(event.get("thread_id"), str):
                session.id = event["thread_id"]
            return reconnects(event)

        env = {**message.env, **helpers_env(session, message.env)} if session.sandbox is None else message.env
        try:
            ran = await run_delivery(
                session, message, self.command(program, session), message.text, env=env, watch=watch
            )
        except asyncio.CancelledError:
            self._thread_so_far(session, env)
            raise
        if not ran.of("turn.completed"):
            self._thread_so_far(session, env)
        started = ran.of("thread.started")
        if started and isinstance(started[0].get("thread_id"), str):
            session.id = started[0]["thread_id"]
        usage, cost = _account(session, message, ran.of("turn.completed"))
        if ran.ended_because:
            return Stopped(failed=ran.ended_because, usage=usage, cost=cost)
        failed = ran.of("turn.failed")
        if failed:
            return Stopped(failed=_error_reason(failed[-1]), usage=usage, cost=cost)
        if not ran.of("turn.completed"):
            return Stopped(failed=self.broke(program, ran), usage=usage, cost=cost)
        said = [
            e["item"].get("text")
            for e in ran.of("item.completed")
            if isinstance(e.get("item"), dict) and e["item"].get("type") == "agent_message"
        ]
        text = said[-1] if said and isinstance(said[-1], str) else None
        return Stopped(text=text, usage=usage, cost=cost)

    def _thread_so_far(self, session: Session, env: Mapping[str, str]) -> None:
        """After a delivery cut short: the thread's tokens so far, from its session file, so the
        next delivery's are counted from there (the next attempt counts this one's from the file)."""
        file = self.session_file(session, env)
        try:
            tokens = usage_codex.read_usage(file).tokens if file is not None else None
        except OSError:
            tokens = None
        if tokens is not None:
            session.data["thread"] = {
                "input_tokens": tokens["input"],
                "cached_input_tokens": tokens["cached"],
                "output_tokens": tokens["output"],
                "reasoning_output_tokens": tokens["reasoning"],
            }

    def command(self, program: str, session: Session) -> list[str]:
        command = [program, "exec", "--json", "--skip-git-repo-check", *self._options(session)]
        command += self.extra_args(session)
        if session.id:
            command += ["resume", session.id]
        return command

    def unknown_option(self, stderr: str) -> bool:
        return any(words in stderr for words in ("unexpected argument", "unrecognized subcommand", "invalid value"))

    def pane_command(self, session: Session, env: Mapping[str, str]) -> PaneProgram:
        """Codex's own terminal UI, for "placement": "pane", with the options of `codex exec`. Nothing
        may wait for a person before the first prompt, nor while no one watches: no update check, and
        no approvals (as in `codex exec`). Its status line shows the thread's id first, where awf
        reads it, so a program started again after it exited resumes the thread."""
        program = self.find(env)[0] or "codex"
        command = [
            program,
            *self._options(session),
            "-c",
            'approval_policy="never"',
            "-c",
            "check_for_update_on_startup=false",
            # Its shell snapshot would write the environment, awf's token with it, to a file others can read.
            "-c",
            "features.shell_snapshot=false",
            "-c",
            f"tui.status_line={json.dumps(list(STATUS_LINE))}",
            *self.extra_args(session),
        ]
        session.data[_RESUMED] = bool(session.id)
        if session.id:
            command += ["resume", session.id]
        extra = helpers_env(session, env) if session.sandbox is None else {}
        return PaneProgram(command, env=extra, ready=_InputBox(session))

    def pane_text(self, session: Session, message: Message, fresh: bool) -> str:
        # The instructions are on its command line, and a resumed thread has the turn's prompt.
        if fresh and message.recovery and not session.data.get(_RESUMED):
            return message.text + "\n\nThe turn's prompt was:\n\n" + message.original
        return message.text

    def pane_watch(self, session: Session, message: Message) -> _Finished | None:
        if not session.id:
            return None  # its thread is not known: awf goes by the screen
        env = {**message.env, **session.sandbox.env} if session.sandbox is not None else message.env
        return _Finished(session, message, _Rollout(usage_codex.home(env), session.id))

    def session_file(self, session: Session, env: Mapping[str, str]) -> Path | None:
        if session.sandbox is not None:
            env = {**env, **session.sandbox.env}  # its own home, where its sessions are
        return usage_codex.session_file(env, session.id) if session.id else None

    def session_usage(self, path: Path, start: int, end: int | None) -> dict[str, Any]:
        return usage_codex.read_usage(path, start, end).as_record(usage_codex.PROVIDER)

    def _options(self, session: Session) -> list[str]:
        """What `codex exec` and the terminal UI share: sandbox, model, instructions."""
        runtime = session.runtime
        sandbox = runtime.get("sandbox", DEFAULT_SANDBOX)
        if session.sandbox is not None:
            # awf's sandbox confines it, and codex's own cannot be made inside it; no web search
            # from the model's side, past the sandbox's network allowlist.
            sandbox = "danger-full-access"
        # No login shell: a profile that sets PATH would hide the `awf` awf puts first on it.
        options = ["--sandbox", sandbox, "-c", "allow_login_shell=false"]
        if session.sandbox is not None:
            options += ["-c", 'web_search="disabled"']
        if sandbox == "workspace-write":
            options += ["--add-dir", str(session.dir)]  # where `awf answer` writes the answer
        model = self.model(session)
        if model:
            options += ["--model", model]
        if runtime.get("effort"):
            options += ["-c", f"model_reasoning_effort={json.dumps(runtime['effort'])}"]
        if session.instructions and not session.id:
            # Once, on the thread's first delivery: a resumed thread has them already.
            options += ["-c", f"developer_instructions={json.dumps(session.instructions)}"]
        return options


def _settings(home: Path, runtime: Mapping[str, Any]) -> dict[str, Any]:
    """Codex's settings as it will read them: config.toml, then the runtime's `-c key=value`s."""
    try:
        settings = tomllib.loads(read_bytes(home / CONFIG).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        settings = {}
    extra = list(runtime.get("extra_args") or [])
    for flag, given in itertools.pairwise(extra):
        key, _, text = given.partition("=")
        if flag not in ("-c", "--config") or not key:
            continue
        try:
            value = tomllib.loads(f"value = {text}")["value"]
        except tomllib.TOMLDecodeError:
            value = text  # codex takes a value that is not TOML as a string
        where = settings
        *parents, last = key.strip().split(".")
        for part in parents:
            where = where.setdefault(part, {}) if isinstance(where.get(part, {}), dict) else {}
        where[last] = value
    return settings


def _provider_keys(settings: Mapping[str, Any]) -> list[str]:
    """The environment variables the configured model providers read their keys from."""
    providers = settings.get("model_providers")
    if not isinstance(providers, dict):
        return []
    return [p["env_key"] for p in providers.values() if isinstance(p, dict) and isinstance(p.get("env_key"), str)]


def helpers_env(session: Session, env: Mapping[str, str]) -> dict[str, str]:
    """A TMPDIR for codex when its home is under the temp folder, else nothing.

    Codex runs each shell command through its own sandbox helper, a link to itself it makes in
    its home and finds on PATH. It refuses to make that link under the temp folder ($TMPDIR, else
    /tmp), and where bubblewrap is installed every command then fails (`bwrap: execvp
    codex-linux-sandbox`). A temp folder of the agent's own, which holds no codex home, lets it."""
    home = usage_codex.home(env)
    temp = Path(env.get("TMPDIR") or "/tmp")
    homes, temps = {home, Path(os.path.realpath(home))}, {temp, Path(os.path.realpath(temp))}
    if not any(each.is_relative_to(root) for each in homes for root in temps):
        return {}
    scratch = session.dir / "tmp"
    scratch.mkdir(mode=0o700, exist_ok=True)
    return {"TMPDIR": str(scratch)}


class _InputBox:
    """The `ready` of codex in a pane: its input box is up (`› Ask Codex...`), and no dialog (`› 1. Trust
    and continue`). For a new thread it reads the thread's id off the status line below the box."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.since: float | None = None

    def __call__(self, screen: str) -> bool:
        boxes = list(_INPUT_BOX.finditer(screen))
        if not boxes:
            self.since = None
            return False
        found = _THREAD_ID.search(screen, boxes[-1].end())  # on the status line, drawn with the box
        if found:
            self.session.id = self.session.id or found.group()
            return True
        # A status line without the id (extra_args set another): a new thread stays unknown.
        self.since = self.since or time.monotonic()
        return time.monotonic() - self.since >= ID_WAIT


class _Rollout:
    """The lines a codex thread's session file gains from now on (the file may not exist yet)."""

    def __init__(self, home: Path, thread: str) -> None:
        self.home = home
        self.thread = thread
        path = self._find()
        self.lines: JsonLines | None = JsonLines(path, size_of(path)) if path is not None else None

    def _find(self) -> Path | None:
        return usage_codex.session_file({"CODEX_HOME": str(self.home)}, self.thread)

    def events(self) -> list[dict[str, Any]]:
        if self.lines is None:
            path = self._find()
            if path is None:
                return []
            self.lines = JsonLines(path)
        try:
            events = self.lines.read()
        except OSError:
            return []
        return [event for event in events if isinstance(event.get("payload"), dict)]


class _Finished:
    """The `pane_watch` of codex: the thread's session file says a turn that began after the paste is
    complete (task_started, task_complete), after the thread's tokens so far (token_count)."""

    def __init__(self, session: Session, message: Message, rollout: _Rollout) -> None:
        self.session = session
        self.message = message
        self.rollout = rollout
        self.totals: dict[str, Any] | None = None
        self.started: set[Any] = set()

    def __call__(self) -> Stopped | None:
        complete: dict[str, Any] | None = None
        for event in self.rollout.events():
            payload = event["payload"]
            if event.get("type") != "event_msg":
                continue
            info = payload.get("info")
            if payload.get("type") == "token_count" and isinstance(info, dict):
                if isinstance(info.get("total_token_usage"), dict):
                    self.totals = info["total_token_usage"]
            elif payload.get("type") == "task_started":
                self.started.add(payload.get("turn_id"))
            elif payload.get("type") == "task_complete" and payload.get("turn_id") in self.started:
                complete = payload  # not the end of a turn begun before this message (steered into)
        if complete is None:
            return None
        usage, cost = _account(self.session, self.message, [{"usage": self.totals}] if self.totals else [])
        # A turn that failed (401, the model unreachable after its retries) says why in `error`.
        failed = _error_reason(complete) if complete.get("error") else None
        return Stopped(failed=failed, usage=usage, cost=cost)


class _Reconnects:
    """Ends a delivery that has done nothing but reconnect for `limit` seconds."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.since: float | None = None
        self.said = ""

    def __call__(self, event: dict[str, Any] | None) -> str | None:
        if event is not None:
            message = event.get("message")
            if event.get("type") == "error" and isinstance(message, str) and message.startswith("Reconnecting"):
                self.since = self.since or time.monotonic()
                self.said = message
            else:
                self.since = None  # it got through: whatever comes now is progress
        if self.since is not None and time.monotonic() - self.since >= self.limit:
            return (
                f"codex cannot reach its model: it kept reconnecting for {self.limit:g} s, and awf ended it "
                f"(codex said: {self.said})"
            )
        return None


def _error_reason(event: dict[str, Any]) -> str:
    error = event.get("error")
    said = str(error.get("message") if isinstance(error, dict) else error or "the turn failed").strip()
    if "401" in said or "Unauthorized" in said:
        return f"codex: {said} (log in with `codex login`, or set the API key its model provider reads)"
    return f"codex: {said}"


def _account(
    session: Session, message: Message, completed: list[dict[str, Any]]
) -> tuple[dict[str, Any] | None, float | None]:
    """This turn's tokens so far (turn.completed counts the thread: take differences) and the
    cost of this delivery's tokens."""
    data = session.data
    if not completed or not isinstance(completed[-1].get("usage"), dict):
        return None, None
    now = {
        key: _int(completed[-1]["usage"].get(key))
        for key in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")
    }
    before = data.get("thread", {})
    delta = {key: max(value - before.get(key, 0), 0) for key, value in now.items()}
    data["thread"] = now
    tokens = {
        "input": delta["input_tokens"],
        "cached": delta["cached_input_tokens"],
        "output": delta["output_tokens"],
        "reasoning": delta["reasoning_output_tokens"],
    }
    if data.get("turn") == message.turn:
        tokens = {key: value + data["tokens"].get(key, 0) for key, value in tokens.items()}
    data["turn"], data["tokens"] = message.turn, tokens
    model = session.runtime.get("model", DEFAULT_MODEL)
    cost, why = price(
        usage_codex.PROVIDER,
        model,
        {"input": delta["input_tokens"], "cached": delta["cached_input_tokens"], "output": delta["output_tokens"]},
    )
    return turn_usage(model, tokens, cost_unknown=why), cost


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


HARNESS = CodexHarness
