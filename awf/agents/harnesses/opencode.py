"""The `opencode` runtime: opencode (`opencode run --format json`), headless, one process a delivery.

    runtime="opencode"                    # {"harness": "opencode"}: opencode's own model
    runtime={"harness": "opencode", "model": "anthropic/claude-sonnet-4-5", "effort": "high",
             "retry_limit": 60, "extra_args": ["--agent", "build"]}

A delivery runs `opencode run --format json` in the agent's cwd with the message on stdin. opencode
lets its shell tool run what its permission rules allow; awf adds one rule, for the agent it runs,
that lets the shell tool run `awf answer` (OPENCODE_CONFIG_CONTENT): every other command is as the
user's own configuration says (a command it would ask about is refused, headless). opencode has no
option for a system prompt of one's own, so the agent's instructions go before the first prompt of
its session. opencode names the session (`ses_...`) on its first event; the next delivery (the
recovery prompt, the next turn) resumes it (`--session ID`). "model" is opencode's
`provider/model`; "effort" is its model variant (`--variant`: "high", "max", "minimal", ...).

Tokens and cost come from its `step_finish` events, one a model call: opencode prices each call
from its catalog of models, and awf prices with genai-prices a call it gave no price.

opencode retries a failing model call five times, with waits that double up to 30 s: a delivery
that has done nothing but retry for `retry_limit` seconds (default 60) is ended, and the turn fails
with opencode's own words (its log on stderr, `--print-logs`).

With "placement": "pane", the agent is opencode's terminal UI with the same model and rule, each
message pasted into it. Its database (usage_opencode) says when the model finished a message (a
whole reply that asks for no tool) or failed, with what tokens and cost; its log file says when it
has done nothing but retry for `retry_limit` seconds.

Under --sandbox, opencode gets fresh XDG folders in its fresh home with only its configuration and
its logins (opencode.json, auth.json), its OPENCODE_ switches, the key variables of the providers it
may call, and their addresses: the base URL its configuration gives, else the provider's own API.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from ...record.files import open_read, read_bytes
from ..harness import Capabilities, Message, PaneProgram, Session, Stopped
from ..headless import Ran, copy_private, run_delivery
from ..kit import AgentCli, program_env
from ..output import size_of
from ..sandbox.wrap import endpoint_of
from ..usage import TOKEN_KINDS, price
from . import opencode_usage as usage_opencode
from .opencode_usage import mapping

TESTED_VERSION = "1.18.33"
VARIABLE = "AWF_OPENCODE"
INSTALL = "Install opencode (npm install -g opencode-ai)"
RETRY_LIMIT = 60.0
BOOTED = b'message="booting location services"'  # its log's line once its UI's server has started
CLOCK_SLACK_MS = 1000  # a message opencode stamps this much before awf pasted it is still its reply
# The agents awf lets run `awf answer`: opencode's two primary agents, and one named by --agent.
AGENTS = ("build", "plan")
ANSWER_RULE = {"bash": {"awf answer *": "allow"}}
_LOG_FIELD = r'{name}="((?:[^"\\]|\\.)*)"'
_STREAM_ERROR = re.compile(r'message="stream error".*\bsmall=false\b.*?' + _LOG_FIELD.format(name=r"error\.error"))
# What opencode's log says of a call refused for its rate (it retries those): its words carry no status.
_RATE_LIMITED = re.compile(r"\b429\b|rate.?limit|too many requests", re.I)
_FAILED = re.compile(r"message=failed\b.*?" + _LOG_FIELD.format(name="error"))
# What a sandboxed opencode gets of its folders: its configuration, and its logins (`opencode auth login`).
CONFIG_FILES = ("opencode.json", "opencode.jsonc", "config.json")
AUTH = "auth.json"
# Its folders, as XDG variables name them, and where they are in a home.
XDG = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "XDG_CACHE_HOME": ".cache",
    "XDG_STATE_HOME": ".local/state",
}
# opencode's switches that name a file or folder of the operator's, which a sandbox does not show (its
# configuration file and folder are copied or left out, its database is in the fresh home), and the
# configuration awf writes itself.
PATH_SWITCHES = (
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENCODE_CONFIG_CONTENT",
    "OPENCODE_DB",
    "OPENCODE_TUI_CONFIG",
    "OPENCODE_MODELS_PATH",
    "OPENCODE_TEST_HOME",
)
# opencode's built-in providers (its catalog, models.dev): the variables it reads a key from, and the
# address of the provider's API. GitHub Copilot's GITHUB_TOKEN is not passed: it is a GitHub login.
PROVIDERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "anthropic": (("ANTHROPIC_API_KEY",), ("api.anthropic.com:443",)),
    "openai": (("OPENAI_API_KEY",), ("api.openai.com:443",)),
    "google": (
        ("GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY"),
        ("generativelanguage.googleapis.com:443",),
    ),
    "openrouter": (("OPENROUTER_API_KEY",), ("openrouter.ai:443",)),
    "opencode": (("OPENCODE_API_KEY",), ("opencode.ai:443",)),
    "github-copilot": ((), ("api.githubcopilot.com:443", "api.github.com:443")),
    "groq": (("GROQ_API_KEY",), ("api.groq.com:443",)),
    "xai": (("XAI_API_KEY",), ("api.x.ai:443",)),
    "deepseek": (("DEEPSEEK_API_KEY",), ("api.deepseek.com:443",)),
    "mistral": (("MISTRAL_API_KEY",), ("api.mistral.ai:443",)),
    "cerebras": (("CEREBRAS_API_KEY",), ("api.cerebras.ai:443",)),
    "fireworks-ai": (("FIREWORKS_API_KEY",), ("api.fireworks.ai:443",)),
    "togetherai": (("TOGETHER_API_KEY",), ("api.together.xyz:443",)),
    "moonshotai": (("MOONSHOT_API_KEY",), ("api.moonshot.ai:443",)),
    "zai": (("ZHIPU_API_KEY",), ("api.z.ai:443",)),
    "huggingface": (("HF_TOKEN",), ("router.huggingface.co:443",)),
    "vercel": (("AI_GATEWAY_API_KEY",), ("ai-gateway.vercel.sh:443",)),
}
# A comment line of a .jsonc file (a `//` within a string, as in a URL, is left alone).
_JSONC_COMMENT = re.compile(r"^\s*//.*$", re.M)
_ENV_REFERENCE = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


class OpencodeHarness(AgentCli):
    name = "opencode"
    capabilities: ClassVar[Capabilities] = Capabilities(
        sessions=True,
        answer_in_output=True,
        tokens=True,
        cost="reported",
        session_file=False,
        pane=True,
        pane_finish=True,
        sandbox_login=True,
    )
    program = "opencode"
    variable = VARIABLE
    install = INSTALL
    tested_version = TESTED_VERSION
    default_model: ClassVar[str | None] = None  # opencode's own: the "model" of its configuration
    models = 'opencode\'s "provider/model" ("anthropic/claude-sonnet-4-5"), or null for opencode\'s own'
    efforts: ClassVar[tuple[str, ...] | str] = 'a model variant of opencode\'s ("high", "max", "minimal", ...)'
    answer_hint: ClassVar[str | None] = (
        "In opencode, pass the answer as one argument to one command of the bash tool: "
        "awf answer '<the answer>' (quote it for the shell)."
    )
    pane_answer_hint: ClassVar[str | None] = answer_hint
    # After `awf answer`, opencode sends the command's output to the model and writes its last words
    # and the step's tokens.
    answer_grace: ClassVar[float] = 30.0
    pane_answer_grace: ClassVar[float] = 30.0

    def options_problem(self, runtime: dict[str, Any]) -> str | None:
        model = runtime.get("model")
        if isinstance(model, str) and "/" not in model.strip("/"):
            return f'"model" is opencode\'s "provider/model" ("anthropic/{model}"), not {model!r}'
        limit = runtime.get("retry_limit", RETRY_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0:
            return f'"retry_limit" is a number of seconds above zero, not {limit!r}'
        return None

    def unknown_option(self, stderr: str) -> bool:
        # opencode answers an option it does not know with its usage text alone, on stderr.
        return "Positionals:" in stderr and "show help" in stderr

    def sandbox_home(self, session: Session, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """Fresh XDG folders in `home` holding only opencode's configuration and its logins (none of its
        sessions, logs, history or plugins); its OPENCODE_ switches, with awf's rule for `awf answer`
        (the sandbox gives a process no variable a delivery adds); the key variables of the providers
        it may call, and those its configuration names ({env:NAME})."""
        folders = {name: home / place for name, place in XDG.items()}
        config, data = folders["XDG_CONFIG_HOME"] / "opencode", folders["XDG_DATA_HOME"] / "opencode"
        for folder in (config, data):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in CONFIG_FILES:
            copy_private(_config_dir(env) / name, config / name)
        copy_private(usage_opencode.data_dir(env) / AUTH, data / AUTH)
        passed = {key: value for key, value in env.items() if key.startswith("OPENCODE_") and key not in PATH_SWITCHES}
        given = env.get("OPENCODE_CONFIG")
        if given:
            copied = home / ".config" / "opencode-config" / Path(given).name  # keeps .json or .jsonc
            copied.parent.mkdir(mode=0o700, exist_ok=True)
            copy_private(Path(given).expanduser(), copied)
            passed["OPENCODE_CONFIG"] = str(copied)
        names = [name for provider in self._providers(session, env) for name in PROVIDERS.get(provider, ((), ()))[0]]
        names += _ENV_REFERENCE.findall("".join(_config_texts(env)))
        passed.update({name: env[name] for name in names if name in env})
        return {
            **passed,
            **{name: str(folder) for name, folder in folders.items()},
            "OPENCODE_CONFIG_CONTENT": self._config(session, env),
        }

    def endpoints(self, session: Session, env: Mapping[str, str]) -> list[str]:
        """The addresses of the providers it may call: the base URL its configuration gives a
        provider or a model of it, else the provider's own."""
        configured = _configured_providers(env)
        found: list[str] = []
        for provider in self._providers(session, env):
            given = configured.get(provider, {})
            urls = [mapping(given.get("options")).get("baseURL"), given.get("api")]
            urls += [mapping(model.get("provider")).get("api") for model in mapping(given.get("models")).values()]
            named = [endpoint_of(url) for url in urls if isinstance(url, str)]
            found += [endpoint for endpoint in named if endpoint] or list(PROVIDERS.get(provider, ((), ()))[1])
        return list(dict.fromkeys(found))

    def _providers(self, session: Session, env: Mapping[str, str]) -> list[str]:
        """The providers opencode may call for this agent: the runtime's model's (else its
        configuration's) and its configuration's small model's, which titles a session; when
        neither names one, every provider it has a login for."""
        settings: dict[str, Any] = {}
        for text in _config_texts(env):
            settings.update(_loads(text))
        models = [self.model(session) or settings.get("model"), settings.get("small_model")]
        named = [model.split("/", 1)[0] for model in models if isinstance(model, str) and "/" in model]
        if named:
            return list(dict.fromkeys(named))
        logins = _loads(_read(usage_opencode.data_dir(env) / AUTH))
        keyed = [name for name, (keys, _) in PROVIDERS.items() if any(key in env for key in keys)]
        return list(dict.fromkeys([*keyed, *logins, *_configured_providers(env)]))

    async def deliver(self, session: Session, message: Message) -> Stopped:
        program, problem = self.find(message.env)
        if program is None:
            return Stopped(failed=problem)
        retries = _Retries(
            message.dir / f"{message.delivery}.stderr.txt", float(session.runtime.get("retry_limit", RETRY_LIMIT))
        )
        text = message.text if session.id else self._first_prompt(session, message)
        command = [program, "run", "--format", "json", "--print-logs", "--log-level", "WARN", *self._options(session)]
        env = {**message.env, "OPENCODE_CONFIG_CONTENT": self._config(session, message.env)}
        ran = await run_delivery(session, message, command, text, env=env, watch=retries)
        named = next((event["sessionID"] for event in ran.events if isinstance(event.get("sessionID"), str)), None)
        session.id = named or session.id
        usage, cost = _account(session, message, ran)
        if ran.ended_because:
            return Stopped(failed=ran.ended_because, usage=usage, cost=cost)
        errors = ran.of("error")
        if errors:
            return Stopped(failed=_error_reason(errors[-1], ran, session), usage=usage, cost=cost)
        if ran.code != 0 or not ran.events:
            return Stopped(failed=self.broke(program, ran), usage=usage, cost=cost)
        return Stopped(text=_last_words(ran), usage=usage, cost=cost)

    def _first_prompt(self, session: Session, message: Message) -> str:
        """The first prompt of a session carries the instructions, and after the recovery prompt
        the turn's prompt, which this session has not seen."""
        text = message.text
        if message.recovery:
            text += "\n\nThe turn's prompt was:\n\n" + message.original
        if session.instructions:
            text = session.instructions.rstrip() + "\n\n" + text
        return text

    def _options(self, session: Session, *, variant: bool = True) -> list[str]:
        """The model, its variant (`effort`; opencode's terminal UI takes none), the session to
        go on with, and the runtime's own arguments."""
        options = []
        model = self.model(session)
        if model:
            options += ["--model", model]
        effort = session.runtime.get("effort")
        if effort and variant:
            options += ["--variant", str(effort)]
        if session.id:
            options += ["--session", session.id]
        return options + self.extra_args(session)

    def pane_command(self, session: Session, env: Mapping[str, str]) -> PaneProgram:
        """opencode's own terminal UI, for "placement": "pane", with the model, the rule for `awf
        answer` and the runtime's arguments; a program started again after it exited continues
        the session. Its UI takes no variant: "effort" is for headless deliveries."""
        program = self.find(env)[0] or "opencode"
        session.data["pane_resumed"] = session.id is not None
        env_more = {"OPENCODE_CONFIG_CONTENT": self._config(session, env)}
        ready = _Ready(_log(program_env(session, env)))
        return PaneProgram([program, *self._options(session, variant=False)], env=env_more, ready=ready, settle=1.0)

    def pane_text(self, session: Session, message: Message, fresh: bool) -> str:
        if fresh and session.data.get("pane_resumed"):
            return message.text  # a continued session has the instructions and the turn's prompt
        return super().pane_text(session, message, fresh)

    def pane_watch(self, session: Session, message: Message) -> _Finished:
        return _Finished(session, message)

    def _config(self, session: Session, env: Mapping[str, str]) -> str:
        """The configuration opencode adds over the user's: the rule that lets the agents awf runs
        use the bash tool for `awf answer`, over any OPENCODE_CONFIG_CONTENT of the user's."""
        try:
            config = json.loads(env.get("OPENCODE_CONFIG_CONTENT") or "{}")
        except ValueError:
            config = {}
        config = config if isinstance(config, dict) else {}
        agents = config.setdefault("agent", {})
        if not isinstance(agents, dict):
            agents = config["agent"] = {}
        for name in {*AGENTS, *_agent_named(self.extra_args(session))}:
            agent = agents.setdefault(name, {})
            if not isinstance(agent, dict):
                continue
            permission = agent.setdefault("permission", {})
            if isinstance(permission, dict):
                bash = permission.get("bash")
                if isinstance(bash, dict):
                    bash.update(ANSWER_RULE["bash"])
                elif bash is None:
                    permission["bash"] = dict(ANSWER_RULE["bash"])
        return json.dumps(config)


def _config_dir(env: Mapping[str, str]) -> Path:
    """The folder of opencode's own configuration."""
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base).expanduser() / "opencode"


def _config_texts(env: Mapping[str, str]) -> list[str]:
    """opencode's configuration as written, in the order it reads it: its folder's files, the file
    OPENCODE_CONFIG names, OPENCODE_CONFIG_CONTENT."""
    files = [_config_dir(env) / name for name in CONFIG_FILES]
    if env.get("OPENCODE_CONFIG"):
        files.append(Path(env["OPENCODE_CONFIG"]).expanduser())
    return [*map(_read, files), env.get("OPENCODE_CONFIG_CONTENT") or ""]


def _configured_providers(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The providers opencode's configuration sets up, by name."""
    found: dict[str, dict[str, Any]] = {}
    for text in _config_texts(env):
        for name, given in mapping(_loads(text).get("provider")).items():
            if isinstance(given, dict):
                found[name] = {**found.get(name, {}), **given}
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _loads(text: str) -> dict[str, Any]:
    """A JSON object of opencode's (with its comments, as a .jsonc file may have), or nothing."""
    try:
        found = json.loads(_JSONC_COMMENT.sub("", text)) if text.strip() else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _agent_named(extra_args: list[str]) -> list[str]:
    """The agent an `--agent NAME` (or `--agent=NAME`) among the runtime's arguments names."""
    for index, arg in enumerate(extra_args):
        if arg == "--agent" and index + 1 < len(extra_args):
            return [extra_args[index + 1]]
        if arg.startswith("--agent="):
            return [arg.split("=", 1)[1]]
    return []


def _last_words(ran: Ran) -> str | None:
    """What the model wrote after its last tool call: its last message, perhaps an answer."""
    words: list[str] = []
    for event in ran.events:
        if event.get("type") == "tool_use":
            words = []
        elif event.get("type") == "text":
            part = event.get("part")
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                words.append(part["text"])
    return "".join(words).strip() or None


def _account(session: Session, message: Message, ran: Ran) -> tuple[dict[str, Any] | None, float | None]:
    """This turn's tokens so far (all its deliveries) and this delivery's cost: opencode's, or
    genai-prices' for calls opencode gave no price."""
    steps = [event["part"] for event in ran.of("step_finish") if isinstance(event.get("part"), dict)]
    if not steps:
        return None, None
    tokens = dict.fromkeys(TOKEN_KINDS, 0)
    reported = 0.0
    for step in steps:
        given = usage_opencode.tokens_of(mapping(step.get("tokens")))
        for kind in tokens:
            tokens[kind] += given[kind]
        cost = step.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            reported += float(cost)
    provider, model = _model_of(session, message)
    priced: float | None = reported
    why = None
    if reported == 0 and any(tokens.values()):
        priced, why = price(provider, model, tokens)
    data = session.data
    if data.get("turn") == message.turn:
        tokens = {key: value + data["tokens"].get(key, 0) for key, value in tokens.items()}
    data["turn"], data["tokens"] = message.turn, tokens
    usage: dict[str, Any] = {"model": model or None, **tokens}
    if why:
        usage["cost_unknown"] = why
    return usage, priced


def _model_of(session: Session, message: Message) -> tuple[str, str]:
    """(provider, model) of the delivery: the runtime's "provider/model", else what opencode
    recorded of the session's last reply."""
    named = session.runtime.get("model")
    if isinstance(named, str) and "/" in named:
        provider, model = named.split("/", 1)
        return provider, model
    if session.id:
        try:
            replies = usage_opencode.replies(usage_opencode.database(program_env(session, message.env)), session.id)
        except Exception:  # the model's name is worth a look, never the turn
            replies = []
        if replies:
            return replies[-1].provider, replies[-1].model
    return "", ""


def _error_reason(event: dict[str, Any], ran: Ran, session: Session) -> str:
    """The error event in opencode's words, with what to do for the errors awf knows."""
    error = mapping(event.get("error"))
    data = mapping(error.get("data"))
    said = str(data.get("message") or error.get("name") or "the turn failed").strip()
    status = data.get("statusCode")
    if error.get("name") == "UnknownError":
        # Its event says only "Unexpected server error"; its log says which.
        logged = _FAILED.findall(_stderr(ran))
        if logged:
            said = _unescape(logged[-1])
    if isinstance(status, int):
        said = f"{said} (HTTP {status})"
    model = session.runtime.get("model") or "its default model"
    if error.get("name") == "ProviderAuthError":
        provider = data.get("providerID") or "its model's provider"
        return (
            f"opencode is not logged in to {provider}: run `opencode auth login`, or set the provider's API key "
            f"(opencode said: {said})"
        )
    reason = f"opencode: {said}"
    if status in (401, 403):
        return reason + "; check the provider's API key (opencode auth login, or its variable)"
    if status == 404 or "ModelNotFound" in said:
        return reason + f'; opencode does not know {model}: check the runtime\'s "model" (opencode models)'
    if status == 429:
        return reason + "; the model's API is rate-limiting this key: wait, or use another model or key"
    return reason


def _stderr(ran: Ran) -> str:
    try:
        return read_bytes(ran.stderr).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _unescape(logged: str) -> str:
    try:
        return str(json.loads(f'"{logged}"')).split("\n", 1)[0]
    except ValueError:
        return logged


class _Retries:
    """Ends a delivery that has done nothing but retry its model call for `limit` seconds, as
    opencode's log (from byte `offset` of the file) shows: of its session, once that is known.

    opencode logs a "stream error" for every failed call, the one it does not retry (a 401) too:
    only a second one shows it retries, and the time counts from the first."""

    def __init__(self, log: Path, limit: float, offset: int = 0) -> None:
        self.log = log
        self.limit = limit
        self.offset: int = offset
        self.pending: bytes = b""
        self.since: float | None = None
        self.failed_calls: int = 0
        self.said: str = ""

    def progress(self) -> None:
        """The model answered: whatever comes now is progress."""
        self.since, self.failed_calls = None, 0

    def __call__(self, event: dict[str, Any] | None, session: str | None = None) -> str | None:
        if event is not None:
            if event.get("type") in ("text", "tool_use", "step_finish"):
                self.progress()
            return None
        try:
            with open_read(self.log) as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return None
        self.offset += len(data)
        *lines, self.pending = (self.pending + data).split(b"\n")
        for line in lines:
            text = line.decode("utf-8", errors="replace")
            found = _STREAM_ERROR.search(text)
            if found and (session is None or f"session.id={session} " in text):
                self.since = self.since or time.monotonic()
                self.failed_calls += 1
                self.said = _unescape(found.group(1))
        if self.since is not None and self.failed_calls > 1 and time.monotonic() - self.since >= self.limit:
            reason = (
                f"opencode cannot get an answer from its model: it kept retrying for {self.limit:g} s, and awf "
                f"ended it (opencode said: {self.said})"
            )
            if _RATE_LIMITED.search(self.said):
                reason += "; the model's API is rate-limiting this key: wait, or use another model or key"
            return reason
        return None


def _log(env: Mapping[str, str]) -> Path:
    """The log file opencode's terminal UI appends to: every opencode of this home's."""
    return usage_opencode.database(env).parent / "log" / "opencode.log"


class _Ready:
    """opencode's UI takes input: its input box is drawn, and its log says the program has booted
    since it was started (its box is drawn before, and what is pasted then is lost)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.offset: int = size_of(log)

    def __call__(self, screen: str) -> bool:
        if "ctrl+p" not in screen:
            return False
        try:
            with open_read(self.log) as handle:
                handle.seek(self.offset)
                return BOOTED in handle.read()
        except OSError:
            return False


class _Finished:
    """The `pane_watch` of opencode: its database has a reply of the model to the message pasted,
    whole and not asking for a tool (the model's turn is over), or failed. The tokens are the
    turn's so far; the cost, this delivery's."""

    def __init__(self, session: Session, message: Message) -> None:
        self.session = session
        self.message = message
        where = program_env(session, message.env)
        self.db: Path = usage_opencode.database(where)
        self.since: int = int(time.time() * 1000) - CLOCK_SLACK_MS
        log = _log(where)
        self.retries: _Retries = _Retries(log, float(session.runtime.get("retry_limit", RETRY_LIMIT)), size_of(log))
        self.answered: int = 0
        # The replies the session had before this paste: the last of them may be stamped within
        # the slack, and is neither this delivery's nor, at a turn's first paste, this turn's.
        self.before: frozenset[str] = _reply_ids(self.db, session.id)
        if session.data.get("pane_turn") != message.turn:
            session.data["pane_turn"] = message.turn
            session.data["pane_turn_since"], session.data["pane_turn_before"] = self.since, self.before
        self.turn_since: int = session.data["pane_turn_since"]
        self.turn_before: frozenset[str] = session.data["pane_turn_before"]

    def __call__(self) -> Stopped | None:
        try:
            if self.session.id is None:
                self.session.id = usage_opencode.session_started(self.db, self.session.cwd.resolve(), self.since)
                if self.session.id is None:
                    return None
            replies = _replies_after(self.db, self.session.id, self.since, self.before)
            # A reply is marked done while opencode still retries its call: only a reason it ended is progress.
            answered = sum(1 for reply in replies if reply.finish is not None and reply.error is None)
            if answered > self.answered:
                self.answered = answered
                self.retries.progress()
            gave_up = self.retries(None, self.session.id)
            if gave_up is not None:
                return Stopped(failed=gave_up)
            if not replies or not replies[-1].completed:
                return None
            last = replies[-1]
            if last.error is None and last.finish in (None, "tool-calls", "unknown"):
                return None  # a tool runs, and the model is asked again
            turn = _replies_after(self.db, self.session.id, self.turn_since, self.turn_before)
        except (OSError, sqlite3.Error):
            return None
        usage, cost = _pane_usage(self.session, turn, replies)
        if last.error is not None:
            return Stopped(failed=f"opencode: {last.error}", usage=usage, cost=cost)
        return Stopped(usage=usage, cost=cost)


def _reply_ids(db: Path, session_id: str | None) -> frozenset[str]:
    """The ids of the replies session `session_id` has now; none for a session not yet named."""
    if session_id is None:
        return frozenset()
    try:
        return frozenset(reply.id for reply in usage_opencode.replies(db, session_id))
    except (OSError, sqlite3.Error):
        return frozenset()


def _replies_after(db: Path, session_id: str, since: int, before: frozenset[str]) -> list[usage_opencode.Reply]:
    """The session's replies stamped at or after `since`, less those it had before (`before`)."""
    return [reply for reply in usage_opencode.replies(db, session_id, since) if reply.id not in before]


def _pane_usage(
    session: Session, turn: list[usage_opencode.Reply], delivery: list[usage_opencode.Reply]
) -> tuple[dict[str, Any], float | None]:
    """The turn's tokens so far and this delivery's cost, from the replies opencode recorded."""
    tokens = {kind: sum(reply.tokens[kind] for reply in turn) for kind in TOKEN_KINDS}
    models = sorted({reply.model for reply in turn if reply.model})
    cost: float | None = 0.0
    why = []
    for reply in delivery:
        priced: float | None = reply.cost
        if not reply.cost and any(reply.tokens.values()):
            priced, problem = price(reply.provider, reply.model, reply.tokens)
            if problem:
                why.append(problem)
        cost = None if cost is None or priced is None else cost + priced
    usage: dict[str, Any] = {"model": models[0] if len(models) == 1 else session.runtime.get("model"), **tokens}
    if len(models) > 1:
        usage["models"] = models
    if why:
        usage["cost_unknown"] = "; ".join(sorted(set(why)))
    return usage, cost


HARNESS = OpencodeHarness
