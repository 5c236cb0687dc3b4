"""The `gemini` runtime: Gemini CLI (`gemini -p`), headless, one process a delivery; or in a pane.

    runtime="gemini"                      # {"harness": "gemini"}: Gemini CLI's own model
    runtime={"harness": "gemini", "model": "gemini-2.5-pro", "retry_limit": 60,
             "extra_args": ["--include-directories", "../shared"]}

A delivery runs `gemini -p "" --output-format stream-json --skip-trust` in the agent's cwd with the
message on stdin, and a policy file (`--policy`) that lets the shell tool run `awf answer` and
nothing else: headless, Gemini CLI refuses every tool call its policies would ask a person about.
Gemini CLI has no option for a system prompt of one's own, so the agent's instructions go before
the first prompt of its session. awf names the session as it starts it (`--session-id`); the next
delivery (the recovery prompt, the next turn) resumes it (`--resume ID`).

Tokens come from the stream's result line, by model (its router may use more than one); Gemini
CLI says no cost, so awf prices them with genai-prices. Its session file
(~/.gemini/tmp/<project>/chats/session-...jsonl) has every reply's tokens, so a turn cut short is
counted from it by the next attempt (usage_gemini).

Gemini CLI retries a failing model call up to ten times, with waits of up to 30 s between them: a
delivery that has done nothing but retry for `retry_limit` seconds (default 60) is ended, and the
turn fails with Gemini CLI's own words.

With "placement": "pane", the agent is Gemini CLI's terminal UI with the same options, each message
pasted into it; its session file says when it finished a message, and with what tokens.

Under --sandbox, Gemini CLI gets a fresh GEMINI_CLI_HOME with only its settings and its login
(settings.json, oauth_creds.json, .env), its key and base URL variables, and the address of its
model's API; its policy also takes away its two web tools, which Google's side runs past the
sandbox's network allowlist.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from ...record.files import file_size, open_read, read_bytes, write_atomic
from ..harness import Capabilities, Message, PaneProgram, Session, Stopped
from ..headless import Ran, copy_private, run_delivery
from ..kit import AgentCli, program_env
from ..output import size_of
from ..sandbox.wrap import endpoint_of
from ..usage import SessionUsage
from . import gemini_usage as usage_gemini

TESTED_VERSION = "0.61.0"
VARIABLE = "AWF_GEMINI"
INSTALL = "Install Gemini CLI (npm install -g @google/gemini-cli)"
RETRY_LIMIT = 60.0
REPLY_SETTLE = 3.0  # seconds its session file stays the same after a reply that ends the model's turn
PASTE_SETTLE = 2.0  # seconds between a paste into its pane and the Enter that sends it
POLICY = "gemini-policy.toml"  # in the agent's folder: the one shell command Gemini CLI may run
# The exit code of a Gemini CLI that has no login.
AUTH_EXIT = 41
_RETRYING = re.compile(r"^Attempt \d+ failed.*Retrying.*$", re.M)
_STATUS = re.compile(r"\b(?:code|status)\b\W{0,3}(\d{3})\b")
_INPUT_BOX = re.compile(r"Type your message", re.I)
_CI_MARKS = ("CI", "GITHUB_ACTIONS")
# What a sandboxed Gemini CLI gets of its folder: its settings (how it logs in), its Google login,
# and the .env it reads its key from.
LOGIN_FILES = ("settings.json", "oauth_creds.json", ".env")
ADC = "application_default_credentials.json"  # GOOGLE_APPLICATION_CREDENTIALS' file, copied for Vertex AI
# What a sandboxed Gemini CLI keeps of the environment: its keys, its model's address, how it logs in.
PASSED = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_CLOUD_ACCESS_TOKEN",
    "GEMINI_MODEL",
    "CODE_ASSIST_ENDPOINT",
)
# Its web tools run on Google's side (search grounding, URL context), past the sandbox's allowlist.
WEB_TOOLS = ("google_web_search", "web_fetch")
GEMINI_API = "generativelanguage.googleapis.com:443"  # an API key's
CODE_ASSIST = "https://cloudcode-pa.googleapis.com"  # a Google login's
GOOGLE_TOKENS = "oauth2.googleapis.com:443"  # where a Google login or a service account gets its tokens


class GeminiHarness(AgentCli):
    name = "gemini"
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
    program = "gemini"
    variable = VARIABLE
    install = INSTALL
    tested_version = TESTED_VERSION
    default_model: ClassVar[str | None] = None  # Gemini CLI's own: its router picks a model for each prompt
    models = "a Gemini model's name (\"gemini-2.5-pro\"), or null for Gemini CLI's own"
    efforts: ClassVar[tuple[str, ...] | str] = ()
    answer_hint: ClassVar[str | None] = (
        "In Gemini CLI, pass the answer as one argument to one command: awf answer '<the answer>' "
        "(quote it for the shell). Its policy lets the shell tool run that command and no other."
    )
    pane_answer_hint: ClassVar[str | None] = answer_hint
    # After `awf answer`, Gemini CLI sends the command's output to the model, writes its last words
    # and the result line (tokens): a node program that is slow on a loaded machine.
    answer_grace: ClassVar[float] = 30.0
    pane_answer_grace: ClassVar[float] = 30.0

    def spec_problem(self, runtime: dict[str, Any]) -> str | None:
        if runtime.get("effort") is not None:
            return '"effort" is not an option of Gemini CLI: leave it out (its thinking is set in its own settings)'
        return super().spec_problem(runtime)

    def options_problem(self, runtime: dict[str, Any]) -> str | None:
        limit = runtime.get("retry_limit", RETRY_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0:
            return f'"retry_limit" is a number of seconds above zero, not {limit!r}'
        return None

    def unknown_option(self, stderr: str) -> bool:
        return "Unknown argument" in stderr

    def sandbox_home(self, session: Session, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """A fresh GEMINI_CLI_HOME holding only Gemini CLI's settings and login (none of its chats,
        history, policies or extensions), its key and base URL variables, and for Vertex AI a copy of
        the service account's key file."""
        own, fresh = usage_gemini.home(env), home / ".gemini"
        fresh.mkdir(mode=0o700, exist_ok=True)
        for name in LOGIN_FILES:
            copy_private(own / name, fresh / name)
        passed = {name: env[name] for name in PASSED if name in env}
        account = env.get("GOOGLE_APPLICATION_CREDENTIALS")
        if account and Path(account).expanduser().is_file():
            copy_private(Path(account).expanduser(), fresh / ADC)
            passed["GOOGLE_APPLICATION_CREDENTIALS"] = str(fresh / ADC)
        return {**passed, "GEMINI_CLI_HOME": str(home)}

    def endpoints(self, session: Session, env: Mapping[str, str]) -> list[str]:
        """Its model's address as its way of logging in says: the base URL it is given, else the
        Gemini API (a key), Code Assist (a Google login) or Vertex AI, with Google's token service."""
        told = {**_dotenv(usage_gemini.home(env) / ".env"), **env}  # the environment wins, as in Gemini CLI
        auth = _auth_type(_settings(usage_gemini.home(env)), told)
        if auth == "oauth-personal":
            urls = [told.get("CODE_ASSIST_ENDPOINT") or CODE_ASSIST]
            return [*_endpoints(urls), GOOGLE_TOKENS]
        if auth == "vertex-ai":
            if told.get("GOOGLE_VERTEX_BASE_URL"):
                return [*_endpoints([told["GOOGLE_VERTEX_BASE_URL"]]), GOOGLE_TOKENS]
            return [_vertex(told.get("GOOGLE_CLOUD_LOCATION")), GOOGLE_TOKENS]
        if told.get("GOOGLE_GEMINI_BASE_URL"):
            return _endpoints([told["GOOGLE_GEMINI_BASE_URL"]])
        return [GEMINI_API]

    async def deliver(self, session: Session, message: Message) -> Stopped:
        program, problem = self.find(message.env)
        if program is None:
            return Stopped(failed=problem)
        retries = _Retries(
            message.dir / f"{message.delivery}.stderr.txt", float(session.runtime.get("retry_limit", RETRY_LIMIT))
        )
        options = self._options(session, message.env)
        command = [program, "-p", "", "--output-format", "stream-json", *options]
        text = message.text
        if "--session-id" in options:
            text = self._first_prompt(session, message)
        ran = await run_delivery(session, message, command, text, watch=retries)
        init = next(iter(ran.of("init")), None)
        if init is not None and isinstance(init.get("session_id"), str):
            session.id = init["session_id"]
        results = ran.of("result")
        usage, cost = _account(session, message, results[-1] if results else None)
        if ran.ended_because:
            return Stopped(failed=ran.ended_because, usage=usage, cost=cost)
        if not results:
            return Stopped(failed=self._broke(program, ran), usage=usage, cost=cost)
        result = results[-1]
        if result.get("status") != "success":
            return Stopped(failed=_error_reason(result, ran, session), usage=usage, cost=cost)
        return Stopped(text=_last_words(ran), usage=usage, cost=cost)

    def _broke(self, program: str, ran: Ran) -> str:
        """Why Gemini CLI ended before its result line, in its own words."""
        said = _stderr_said(ran)
        if ran.code == AUTH_EXIT:
            return (
                f"gemini is not logged in: run `gemini` once to log in, or set GEMINI_API_KEY "
                f"(Gemini CLI said: {said or 'nothing'})"
            )
        return self.broke(program, ran)

    def _first_prompt(self, session: Session, message: Message) -> str:
        """The first prompt of a session carries the instructions, and after the recovery prompt
        the turn's prompt, which this session has not seen."""
        text = message.text
        if message.recovery:
            text += "\n\nThe turn's prompt was:\n\n" + message.original
        if session.instructions:
            text = session.instructions.rstrip() + "\n\n" + text
        return text

    def _options(self, session: Session, env: Mapping[str, str]) -> list[str]:
        options = ["--skip-trust", "--policy", str(_policy(session, web=session.sandbox is None))]
        model = self.model(session)
        if model:
            options += ["--model", model]
        options += self._session_options(session, env)
        return options + self.extra_args(session)

    def _session_options(self, session: Session, env: Mapping[str, str]) -> list[str]:
        """Resume the agent's session once Gemini CLI has written it; else start it, named by awf."""
        if session.id and self.session_file(session, env) is not None:
            return ["--resume", session.id]
        self.name_session(session)
        assert session.id is not None
        return ["--session-id", session.id]

    def name_session(self, session: Session) -> None:
        session.id = session.id or str(uuid.uuid4())

    def session_file(self, session: Session, env: Mapping[str, str]) -> Path | None:
        return usage_gemini.session_file(program_env(session, env), session.id) if session.id else None

    def session_usage(self, path: Path, start: int, end: int | None) -> dict[str, Any]:
        return usage_gemini.read_usage(path, start, end).as_record(usage_gemini.PROVIDER)

    def pane_command(self, session: Session, env: Mapping[str, str]) -> PaneProgram:
        """Gemini CLI's own terminal UI, for "placement": "pane", with the options of a headless
        delivery; a program started again after it exited resumes the session."""
        program = self.find(env)[0] or "gemini"
        file = self.session_file(session, env) if session.id else None
        session.data["pane_resumed"] = file is not None
        options = self._options(session, env)
        # Gemini CLI takes an Enter that comes soon after a paste as part of it (a line break), by
        # its own clock, which a loaded machine slows: awf waits before it presses Enter.
        ready = _Ready(self, session, env, size_of(file))
        # Gemini CLI runs headless whenever CI or GITHUB_ACTIONS is "true", terminal or not, and
        # then exits at once for want of a prompt: in a pane it must see neither.
        return PaneProgram([program, *options], ready=ready, settle=PASTE_SETTLE, unset=_CI_MARKS)

    def pane_text(self, session: Session, message: Message, fresh: bool) -> str:
        if fresh and session.data.get("pane_resumed"):
            return message.text  # a resumed session has the instructions and the turn's prompt
        return super().pane_text(session, message, fresh)

    def pane_watch(self, session: Session, message: Message) -> _Finished | None:
        return _Finished(self, session, message)


def _policy(session: Session, *, web: bool) -> Path:
    """The policy file that lets the shell tool run `awf answer` (and Gemini CLI's read-only tools,
    as by default), written into the agent's folder; without `web`, its web tools are denied too.
    Written at each delivery: the agent's folder is the agent's to write, and what it made of the
    file is never read as awf's."""
    text = (
        "# awf: Gemini CLI may run `awf answer` without asking; every other shell command is refused.\n"
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "awf answer"\ndecision = "allow"\n'
        "priority = 900\n"
    )
    if not web:
        tools = ", ".join(f'"{tool}"' for tool in WEB_TOOLS)
        text += (
            "\n# awf: in a sandbox, no web tools: Google's side would fetch past its network allowlist.\n"
            f'[[rule]]\ntoolName = [{tools}]\ndecision = "deny"\npriority = 950\n'
        )
    path = session.dir / POLICY
    write_atomic(path, text)
    return path


def _settings(folder: Path) -> dict[str, Any]:
    """Gemini CLI's settings.json in `folder`, or nothing when it cannot be read."""
    try:
        settings = json.loads((folder / "settings.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return settings if isinstance(settings, dict) else {}


def _auth_type(settings: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """How Gemini CLI logs in: its settings' choice, else what its environment says, as it decides."""
    security = settings.get("security")
    auth = security.get("auth") if isinstance(security, dict) else None
    chosen = auth.get("selectedType") if isinstance(auth, dict) else None
    if isinstance(chosen, str) and chosen:
        return chosen
    if env.get("GOOGLE_GENAI_USE_GCA") == "true":
        return "oauth-personal"
    if env.get("GOOGLE_GENAI_USE_VERTEXAI") == "true":
        return "vertex-ai"
    return None


def _dotenv(path: Path) -> dict[str, str]:
    """The variables a .env file sets (KEY=VALUE lines); nothing when there is none."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    found = {}
    for line in lines:
        key, equals, value = line.strip().removeprefix("export ").partition("=")
        if equals and key.strip().isidentifier():
            found[key.strip()] = value.strip().strip("'\"")
    return found


def _vertex(location: str | None) -> str:
    """Vertex AI's address for a location, as Gemini CLI picks it."""
    if location in ("us", "eu"):
        return f"aiplatform.{location}.rep.googleapis.com:443"
    if location and location != "global":
        return f"{location}-aiplatform.googleapis.com:443"
    return "aiplatform.googleapis.com:443"


def _endpoints(urls: list[str]) -> list[str]:
    return [endpoint for endpoint in map(endpoint_of, urls) if endpoint]


def _last_words(ran: Ran) -> str | None:
    """What the model wrote after its last tool call: its last message, perhaps an answer."""
    words: list[str] = []
    for event in ran.events:
        if event.get("type") == "tool_use":
            words = []
        elif event.get("type") == "message" and event.get("role") == "assistant":
            content = event.get("content")
            if isinstance(content, str):
                words = [*words, content] if event.get("delta") else [content]
    return "".join(words).strip() or None


def _account(
    session: Session, message: Message, result: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, float | None]:
    """This turn's tokens so far (all its deliveries) and this delivery's cost, priced by model."""
    stats = result.get("stats") if result else None
    if not isinstance(stats, dict):
        return None, None
    by_model = stats.get("models") if isinstance(stats.get("models"), dict) else {}
    if not by_model:
        by_model = {session.runtime.get("model") or "": stats}
    used = SessionUsage()
    for model, given in by_model.items():
        if isinstance(given, dict):
            used.add(
                model,
                {
                    "input": _int(given.get("input_tokens")),
                    "cached": _int(given.get("cached")),
                    "output": _int(given.get("output_tokens")),
                },
            )
    cost, why, _ = used.priced(usage_gemini.PROVIDER)
    tokens = {kind: used.tokens[kind] for kind in ("input", "cached", "output")}
    data = session.data
    if data.get("turn") == message.turn:
        tokens = {key: value + data["tokens"].get(key, 0) for key, value in tokens.items()}
    data["turn"], data["tokens"] = message.turn, tokens
    models = [name for name in used.by_model if name]
    model = models[0] if len(models) == 1 else session.runtime.get("model")
    usage: dict[str, Any] = {"model": model, **tokens}
    if len(models) > 1:
        usage["models"] = models
    if why:
        usage["cost_unknown"] = why
    return usage, cost


def _stderr_said(ran: Ran) -> str:
    """Gemini CLI's own message on stderr: its lines that are not a stack trace, a usage text or a
    warning about the terminal."""
    try:
        text = read_bytes(ran.stderr).decode("utf-8", errors="replace")
    except OSError:
        return ""
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or line.startswith((" ", "\t")) or stripped.startswith(("at ", "Warning:", "Ripgrep")):
            continue
        if stripped in ("}", "{") or stripped.endswith(":"):
            continue
        kept.append(stripped)
    return " ".join(kept[:3])[:600]


def _error_reason(result: dict[str, Any], ran: Ran, session: Session) -> str:
    """The result line's error in Gemini CLI's words, with what to do for the errors awf knows."""
    error = result.get("error")
    said = str(error.get("message") if isinstance(error, dict) else error or "the turn failed").strip()
    inner = re.search(r"\{.*\}", said)
    status = None
    if inner:
        try:
            body = json.loads(inner.group(0)).get("error", {})
            status = body.get("code")
            said = f"{body.get('message', said)} (HTTP {status} {body.get('status', '')})".replace(" )", ")")
        except (ValueError, AttributeError):
            pass
    if status is None:
        found = _STATUS.search(ran.stderr_tail())
        status = int(found.group(1)) if found else None
    reason = f"gemini: {said}"
    if status in (401, 403):
        return reason + "; check GEMINI_API_KEY, or log in again by running `gemini`"
    if status == 404:
        model = session.runtime.get("model") or "its default model"
        return reason + f"; the model's API does not know {model}: check the runtime's \"model\""
    if status == 429:
        return reason + "; the model's API is rate-limiting this key: wait, or use another model or key"
    return reason


class _Retries:
    """Ends a delivery that has done nothing but retry its model call for `limit` seconds."""

    def __init__(self, stderr: Path, limit: float) -> None:
        self.stderr = stderr
        self.limit = limit
        self.offset = 0
        self.since: float | None = None
        self.said = ""

    def __call__(self, event: dict[str, Any] | None) -> str | None:
        if event is not None:
            if event.get("type") in ("message", "tool_use", "tool_result") and event.get("role") != "user":
                self.since = None  # the model answered: whatever comes now is progress
            return None
        try:
            with open_read(self.stderr) as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return None
        self.offset += len(data)
        retries = _RETRYING.findall(data.decode("utf-8", errors="replace"))
        if retries:
            self.since = self.since or time.monotonic()
            self.said = retries[-1].strip()
        if self.since is not None and time.monotonic() - self.since >= self.limit:
            return (
                f"gemini cannot get an answer from its model: it kept retrying for {self.limit:g} s, and awf "
                f"ended it (Gemini CLI said: {self.said})"
            )
        return None


class _Finished:
    """The `pane_watch` of Gemini CLI: its session file shows a reply after the paste that calls no
    tool (the model's turn is over), and has stayed the same for REPLY_SETTLE seconds since. The
    tokens are the turn's so far; the cost, this delivery's."""

    def __init__(self, harness: GeminiHarness, session: Session, message: Message) -> None:
        self.harness = harness
        self.session = session
        self.message = message
        self.file = harness.session_file(session, message.env)
        self.offset: int = size_of(self.file)
        if session.data.get("pane_turn") != message.turn:
            session.data["pane_turn"], session.data["pane_turn_offset"] = message.turn, self.offset
        self.turn_offset: int = session.data["pane_turn_offset"]
        self.quiet: tuple[int, float] | None = None  # the file's size, and since when it is that

    def __call__(self) -> Stopped | None:
        if self.file is None:
            self.file = self.harness.session_file(self.session, self.message.env)
            if self.file is None:
                return None  # the program has not written its session yet: nothing is finished
        try:
            if not _replied(self.file, self.offset):
                self.quiet = None
                return None
            # Gemini CLI writes a reply before the tool calls it makes, then again with them once they
            # ran: a reply with none is the end only once the file has stayed the same a while.
            size = file_size(self.file)
            if self.quiet is None or self.quiet[0] != size:
                self.quiet = (size, time.monotonic())
                return None
            if time.monotonic() - self.quiet[1] < REPLY_SETTLE:
                return None
            turn = usage_gemini.read_usage(self.file, self.turn_offset)
            delivery = usage_gemini.read_usage(self.file, self.offset)
        except OSError:
            return None
        cost, why, _ = delivery.priced(usage_gemini.PROVIDER)
        models = [name for name in turn.by_model if name]
        tokens = {kind: turn.tokens[kind] for kind in ("input", "cached", "output")}
        usage: dict[str, Any] = {
            "model": models[0] if len(models) == 1 else self.session.runtime.get("model"),
            **tokens,
        }
        if len(models) > 1:
            usage["models"] = models
        if why:
            usage["cost_unknown"] = why
        return Stopped(usage=usage, cost=cost)


def _replied(file: Path, offset: int) -> bool:
    """Whether the file's last message after `offset` is a reply of the model with no tool call,
    to a message written after `offset` (not the end of the reply to an earlier one)."""
    last: dict[str, Any] | None = None
    asked = False
    with open_read(file) as handle:
        handle.seek(offset)
        data = handle.read()
    for raw in data.splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            break
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and "type" in line and "id" in line:
            last = line
            asked = asked or line["type"] == "user"
    if not asked or last is None or last.get("type") != "gemini" or last.get("toolCalls"):
        return False
    # A reply that calls a tool is written first without its calls, which come once they have run:
    # only one with words can be taken for the end.
    return bool(last.get("tokens")) and bool(str(last.get("content") or "").strip())


class _Ready:
    """Gemini CLI takes input: its input box is up, and it has written its session (a new session's
    file, or the lines a resumed one adds). Its input box shows before it has finished starting,
    and an Enter pressed then is lost."""

    def __init__(self, harness: GeminiHarness, session: Session, env: Mapping[str, str], size: int) -> None:
        self.harness = harness
        self.session = session
        self.env = env
        self.size = size

    def __call__(self, screen: str) -> bool:
        if _INPUT_BOX.search(screen) is None:
            return False
        file = self.harness.session_file(self.session, self.env)
        return file is not None and size_of(file) > self.size


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


HARNESS = GeminiHarness
