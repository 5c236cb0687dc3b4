"""The `pi` runtime: pi, the coding agent (`pi -p --mode json`), headless, one process a delivery.

    runtime="pi"                          # {"harness": "pi"}: pi's own provider and model
    runtime={"harness": "pi", "model": "anthropic/claude-sonnet-4-5", "effort": "high",
             "extra_args": ["--tools", "read,bash"]}

A delivery runs `pi -p --mode json` in the agent's cwd with the message on stdin, the agent's
instructions appended to pi's system prompt, and `--session FILE`: awf names the file pi keeps the
agent's session in as it starts it, and every later delivery (the recovery prompt, the next turn)
opens the same file, where pi goes on with the conversation so far. pi names the session itself
(the first line of its stream): that id is the turn's `session`.

pi asks no one before it runs a command: its `bash` tool runs whatever the model asks, `awf
answer` among it. awf gives it no permission, as pi has none to give, and takes none away.

Tokens and cost come from pi's stream: each reply of the model carries its tokens and what pi
priced it at from its own table of models. The session file holds the same replies, so a turn
cut short is counted from it by the next attempt (usage_pi). pi retries a failing model call a
few times on its own (`retry.maxRetries` in its settings, 3 by default) and then gives up: the
turn fails with its words.

With "placement": "pane", the agent is pi's terminal UI with the same options, each message
pasted into it; its session file says when it finished a message, and with what tokens.

Under --sandbox, pi gets a fresh PI_CODING_AGENT_DIR with only its logins, providers and settings
(auth.json, models.json, settings.json), the key variables of the providers it may call, and
their addresses: the baseUrl models.json gives a provider, else the provider's public API.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ...record.files import is_file, read_bytes
from ..harness import Capabilities, Message, PaneProgram, Session, Stopped
from ..headless import Ran, copy_private, run_delivery
from ..kit import AgentCli, program_env, turn_usage
from ..output import size_of
from ..sandbox.wrap import endpoint_of
from ..usage import read_lines
from . import pi_usage as usage_pi

TESTED_VERSION = "0.73.1"
VARIABLE = "AWF_PI"
INSTALL = "Install pi (npm install -g @mariozechner/pi-coding-agent)"
EFFORTS = ("off", "minimal", "low", "medium", "high", "xhigh")
# pi's retries of a failed call when its settings say nothing: how many, and the first wait.
DEFAULT_RETRIES = 3
DEFAULT_RETRY_WAIT_MS = 2000
_FILE = "pi_session_file"  # in session.data: the file awf named for the agent's session
_RESUMED = "pi_resumed"  # in session.data: the pane's program opened a session it had written before
# Seconds, besides pi's own wait before its next try, for a failed call it retries to be written:
# the provider's client retries it first.
RETRY_SETTLE = 10.0
_BORDER = re.compile(r"^─{20,}\s*$", re.M)
_STATUS = re.compile(r"^\s*(\d{3})\b\s*(.*)$", re.S)
# What a sandboxed pi gets of its folder: its logins (keys and OAuth tokens), its providers of your
# own and addresses of others, and its settings (default model, retries).
AUTH, MODELS, SETTINGS = "auth.json", "models.json", "settings.json"


@dataclass(frozen=True)
class Provider:
    """One of pi's built-in providers, as a sandboxed pi needs it."""

    keys: tuple[str, ...]  # the variables pi reads its key from
    hosts: tuple[str, ...]  # the address of its API
    needs: tuple[str, ...] = ()  # what else of the environment it needs (an account's id, a resource)


# pi's built-in providers by name, as pi-ai 0.73 has them.
PROVIDERS = {
    "anthropic": Provider(("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"), ("api.anthropic.com:443",)),
    "openai": Provider(("OPENAI_API_KEY",), ("api.openai.com:443",)),
    "openai-codex": Provider((), ("chatgpt.com:443",)),
    "google": Provider(("GEMINI_API_KEY",), ("generativelanguage.googleapis.com:443",)),
    # Only Copilot's own variable: GH_TOKEN and GITHUB_TOKEN would hand the agent a GitHub login.
    "github-copilot": Provider(
        ("COPILOT_GITHUB_TOKEN",), ("api.individual.githubcopilot.com:443", "api.github.com:443")
    ),
    "deepseek": Provider(("DEEPSEEK_API_KEY",), ("api.deepseek.com:443",)),
    "groq": Provider(("GROQ_API_KEY",), ("api.groq.com:443",)),
    "cerebras": Provider(("CEREBRAS_API_KEY",), ("api.cerebras.ai:443",)),
    "xai": Provider(("XAI_API_KEY",), ("api.x.ai:443",)),
    "openrouter": Provider(("OPENROUTER_API_KEY",), ("openrouter.ai:443",)),
    "vercel-ai-gateway": Provider(("AI_GATEWAY_API_KEY",), ("ai-gateway.vercel.sh:443",)),
    "zai": Provider(("ZAI_API_KEY",), ("api.z.ai:443",)),
    "mistral": Provider(("MISTRAL_API_KEY",), ("api.mistral.ai:443",)),
    "minimax": Provider(("MINIMAX_API_KEY",), ("api.minimax.io:443",)),
    "minimax-cn": Provider(("MINIMAX_CN_API_KEY",), ("api.minimaxi.com:443",)),
    "moonshotai": Provider(("MOONSHOT_API_KEY",), ("api.moonshot.ai:443",)),
    "moonshotai-cn": Provider(("MOONSHOT_API_KEY",), ("api.moonshot.cn:443",)),
    "huggingface": Provider(("HF_TOKEN",), ("router.huggingface.co:443",)),
    "fireworks": Provider(("FIREWORKS_API_KEY",), ("api.fireworks.ai:443",)),
    "opencode": Provider(("OPENCODE_API_KEY",), ("opencode.ai:443",)),
    "opencode-go": Provider(("OPENCODE_API_KEY",), ("opencode.ai:443",)),
    "kimi-coding": Provider(("KIMI_API_KEY",), ("api.kimi.com:443",)),
    "xiaomi": Provider(("XIAOMI_API_KEY",), ("api.xiaomimimo.com:443",)),
    "cloudflare-workers-ai": Provider(("CLOUDFLARE_API_KEY",), ("api.cloudflare.com:443",), ("CLOUDFLARE_ACCOUNT_ID",)),
    "cloudflare-ai-gateway": Provider(
        ("CLOUDFLARE_API_KEY",), ("gateway.ai.cloudflare.com:443",), ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_GATEWAY_ID")
    ),
    # Its address is the resource's (_azure).
    "azure-openai-responses": Provider(
        ("AZURE_OPENAI_API_KEY",),
        (),
        (
            "AZURE_OPENAI_BASE_URL",
            "AZURE_OPENAI_RESOURCE_NAME",
            "AZURE_OPENAI_API_VERSION",
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
        ),
    ),
}
# Where pi refreshes the OAuth login (/login) of a provider that has one.
OAUTH_HOSTS = {
    "anthropic": "platform.claude.com:443",
    "openai-codex": "auth.openai.com:443",
    "github-copilot": "api.github.com:443",
}
# pi's own switches a sandboxed pi keeps.
PI_SWITCHES = ("PI_OFFLINE", "PI_TELEMETRY", "PI_SKIP_VERSION_CHECK", "PI_CACHE_RETENTION")
_VARIABLE_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


class PiHarness(AgentCli):
    name = "pi"
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
    program = "pi"
    variable = VARIABLE
    install = INSTALL
    tested_version = TESTED_VERSION
    default_model: ClassVar[str | None] = None  # pi's own: its settings' defaultModel, else its provider's
    models = 'a model pi knows ("claude-sonnet-4-5", "anthropic/claude-opus-4-7"), or null for pi\'s own'
    efforts: ClassVar[tuple[str, ...] | str] = EFFORTS
    # After `awf answer`, pi sends the command's output to the model and writes its last words.
    answer_grace: ClassVar[float] = 15.0
    pane_answer_grace: ClassVar[float] = 15.0

    def unknown_option(self, stderr: str) -> bool:
        return "Unknown option" in stderr

    def sandbox_home(self, session: Session, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """A fresh PI_CODING_AGENT_DIR holding only pi's logins, providers and settings (none of its
        sessions, extensions, skills or context files), and the variables of the providers it may call:
        their keys, and those models.json and auth.json name."""
        own, fresh = usage_pi.agent_dir(env), home / ".pi" / "agent"
        fresh.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in (AUTH, MODELS, SETTINGS):
            copy_private(own / name, fresh / name)
        names = [*PI_SWITCHES, *_named_variables(_json(own / MODELS), _json(own / AUTH))]
        for name in self._providers(session, env):
            provider = PROVIDERS.get(name)
            names += [*provider.keys, *provider.needs] if provider else []
        return {**{name: env[name] for name in dict.fromkeys(names) if name in env}, "PI_CODING_AGENT_DIR": str(fresh)}

    def endpoints(self, session: Session, env: Mapping[str, str]) -> list[str]:
        """The addresses of the providers it may call: the baseUrl models.json gives one, else the
        provider's own; and where an OAuth login of pi's is refreshed."""
        own = usage_pi.agent_dir(env)
        custom, logins = _providers_of(_json(own / MODELS)), _json(own / AUTH)
        found: list[str] = []
        for provider in self._providers(session, env):
            given = custom.get(provider, {})
            urls = [given.get("baseUrl"), *(model.get("baseUrl") for model in _models_of(given))]
            named = [endpoint_of(url) for url in urls if isinstance(url, str)]
            built_in = PROVIDERS[provider].hosts if provider in PROVIDERS else ()
            found += [endpoint for endpoint in named if endpoint] or list(built_in)
            if provider == "azure-openai-responses":
                found += _azure(env)
            login = logins.get(provider)
            if isinstance(login, dict) and login.get("type") == "oauth" and provider in OAUTH_HOSTS:
                found.append(OAUTH_HOSTS[provider])
        return list(dict.fromkeys(found))

    def _providers(self, session: Session, env: Mapping[str, str]) -> list[str]:
        """The providers pi may call for this agent: the one the runtime's model names, else its
        settings' default when the runtime names no model, else every provider it has a login for
        (a key in its variable or in auth.json, or one of your own in models.json)."""
        own = usage_pi.agent_dir(env)
        custom, logins = _providers_of(_json(own / MODELS)), _json(own / AUTH)
        model = self.model(session)
        named = model.split("/", 1)[0] if model and "/" in model else None
        if named is not None and (named in PROVIDERS or named in custom):
            return [named]
        default = _json(own / SETTINGS).get("defaultProvider")
        if not model and isinstance(default, str) and default:
            return [default]
        keyed = [name for name, provider in PROVIDERS.items() if any(key in env for key in provider.keys)]
        return list(dict.fromkeys([*keyed, *logins, *custom]))

    async def deliver(self, session: Session, message: Message) -> Stopped:
        program, problem = self.find(message.env)
        if program is None:
            return Stopped(failed=problem)
        command = [program, "-p", "--mode", "json", *self._options(session, message.env)]

        def learn_session(event: dict[str, Any] | None) -> None:
            # pi's first line names its session: known at once, the turn records where its file is.
            if event is not None and event.get("type") == "session" and isinstance(event.get("id"), str):
                session.id = event["id"]

        ran = await run_delivery(session, message, command, message.text, watch=learn_session)
        replies = usage_pi.replies(ran.of("message_end"))
        usage, cost = _account(session, message, replies)
        if not replies:
            return Stopped(failed=self._broke(program, ran, session), usage=usage, cost=cost)
        last = replies[-1]
        if last.get("stopReason") in ("error", "aborted"):
            retried = len(ran.of("auto_retry_start"))
            return Stopped(failed=_error_reason(last, retried, session), usage=usage, cost=cost)
        return Stopped(text=_words(last), usage=usage, cost=cost)

    def _broke(self, program: str, ran: Ran, session: Session) -> str:
        """Why pi ended before the model replied, in its own words on stderr."""
        lines = [line.strip() for line in ran.stderr_tail().splitlines()]
        no_key = next((line for line in lines if line.startswith("No API key found")), None)
        if no_key is not None:
            return (
                f"pi is not logged in to its model's provider: set the provider's API key (ANTHROPIC_API_KEY, ...) "
                f"or run `pi` and /login (pi said: {no_key})"
            )
        unknown = next((line for line in lines if re.search(r"Model .* not found", line)), None)
        if unknown is not None:
            model = self.model(session) or "its default model"
            return (
                f'pi does not know the model {model}: check the runtime\'s "model" (`pi --list-models` lists them) '
                f"(pi said: {unknown})"
            )
        return self.broke(program, ran)

    def _options(self, session: Session, env: Mapping[str, str]) -> list[str]:
        options = ["--session", str(self._file(session, env))]
        model = self.model(session)
        if model:
            options += ["--model", model]
        if session.runtime.get("effort"):
            options += ["--thinking", session.runtime["effort"]]
        if session.instructions:
            options += ["--append-system-prompt", session.instructions]
        return options + self.extra_args(session)

    def _file(self, session: Session, env: Mapping[str, str]) -> Path:
        """The file of the agent's session: named by awf on the first delivery, in pi's own folder of
        sessions for the agent's cwd (in a sandbox, its fresh home's), and opened again by every later one."""
        named = session.data.get(_FILE)
        if not named:
            stamp = time.strftime("%Y-%m-%dT%H-%M-%S", time.gmtime())
            folder = usage_pi.sessions_dir(program_env(session, env), session.cwd)
            named = str(folder / f"{stamp}_awf-{uuid.uuid4()}.jsonl")
            session.data[_FILE] = named
        return Path(named)

    def session_file(self, session: Session, env: Mapping[str, str]) -> Path | None:
        if session.data.get(_FILE) or session.id is None:
            # awf names the file before pi runs: the turn records where its use will be before pi
            # writes the first byte, so an attempt killed at once still leaves where to read it.
            return self._file(session, env)
        return usage_pi.find_session(program_env(session, env), session.cwd, session.id)

    def session_usage(self, path: Path, start: int, end: int | None) -> dict[str, Any]:
        return usage_pi.read_usage(path, start, end).as_record()

    def pane_command(self, session: Session, env: Mapping[str, str]) -> PaneProgram:
        """pi's own terminal UI, for "placement": "pane", with the options of a headless delivery: a
        program started again after it exited opens the same session file."""
        program = self.find(env)[0] or "pi"
        options = self._options(session, env)
        session.data[_RESUMED] = is_file(self._file(session, env))
        return PaneProgram([program, *options], ready=_takes_input)

    def pane_text(self, session: Session, message: Message, fresh: bool) -> str:
        # The instructions are on its command line, and a resumed session has the turn's prompt.
        if fresh and message.recovery and not session.data.get(_RESUMED):
            return message.text + "\n\nThe turn's prompt was:\n\n" + message.original
        return message.text

    def pane_watch(self, session: Session, message: Message) -> _Finished:
        retries = _retries(program_env(session, message.env), session.cwd)
        return _Finished(session, message, self._file(session, message.env), retries)


def _json(path: Path) -> dict[str, Any]:
    """A JSON object of pi's folder; nothing when it is not there or not one."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _providers_of(models: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The providers models.json configures, by name."""
    given = models.get("providers")
    if not isinstance(given, dict):
        return {}
    return {name: each for name, each in given.items() if isinstance(each, dict)}


def _models_of(provider: Mapping[str, Any]) -> list[dict[str, Any]]:
    given = provider.get("models")
    return [model for model in given if isinstance(model, dict)] if isinstance(given, list) else []


def _named_variables(models: Mapping[str, Any], logins: Mapping[str, Any]) -> list[str]:
    """The variables pi reads keys and headers from: a value of models.json (`apiKey`, `headers`) or of
    auth.json (an API key's `key`) that is a variable's name."""
    values: list[Any] = []
    for provider in _providers_of(models).values():
        headers = provider.get("headers")
        values += [provider.get("apiKey"), *(headers.values() if isinstance(headers, dict) else ())]
    values += [
        login.get("key") for login in logins.values() if isinstance(login, dict) and login.get("type") == "api_key"
    ]
    return [value for value in values if isinstance(value, str) and _VARIABLE_NAME.fullmatch(value)]


def _azure(env: Mapping[str, str]) -> list[str]:
    """Azure OpenAI's address: its base URL, else its resource's host."""
    if env.get("AZURE_OPENAI_BASE_URL"):
        endpoint = endpoint_of(env["AZURE_OPENAI_BASE_URL"])
        return [endpoint] if endpoint else []
    resource = env.get("AZURE_OPENAI_RESOURCE_NAME")
    return [f"{resource}.openai.azure.com:443"] if resource else []


def _words(message: dict[str, Any]) -> str | None:
    """The text of a reply: the model's last words, perhaps an answer."""
    content = message.get("content")
    if not isinstance(content, list):
        return None
    text = "".join(
        str(block.get("text") or "") for block in content if isinstance(block, dict) and block.get("type") == "text"
    )
    return text.strip() or None


def _account(
    session: Session, message: Message, replies: list[dict[str, Any]]
) -> tuple[dict[str, Any] | None, float | None]:
    """This turn's tokens so far (all its deliveries) and this delivery's cost, as pi priced it."""
    used = usage_pi.used_by(replies)
    if not used.calls:
        return None, None
    tokens = {kind: used.tokens[kind] for kind in ("input", "cached", "cache_write", "output")}
    data = session.data
    if data.get("turn") == message.turn:
        tokens = {key: value + data["tokens"].get(key, 0) for key, value in tokens.items()}
    data["turn"], data["tokens"] = message.turn, tokens
    models = [name for name in used.by_model if name]
    model = models[0] if len(models) == 1 else session.model
    return turn_usage(model, tokens, models=models), used.cost


def _error_reason(last: dict[str, Any], retried: int, session: Session) -> str:
    """The failed call in pi's words, with what to do for the errors awf knows."""
    said = str(last.get("errorMessage") or f"the model's reply was {last.get('stopReason')}").strip()
    status: int | None = None
    found = _STATUS.match(said)
    if found:
        status = int(found.group(1))
        try:
            body = json.loads(found.group(2))
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and error.get("message"):
            kind = f" {error['type']}" if error.get("type") else ""
            said = f"{error['message']} (HTTP {status}{kind})"
    if retried:
        said += f", after {retried} {'retry' if retried == 1 else 'retries'}"
    reason = f"pi: {said}"
    provider = last.get("provider") or "its provider"
    if status in (401, 403):
        return reason + f"; check the API key pi uses for {provider}, or log in again with `pi` and /login"
    if status == 404:
        model = session.model or last.get("model") or "its default model"
        return reason + f"; the model's API does not know {model}: check the runtime's \"model\""
    if status == 429:
        return reason + "; the model's API is rate-limiting this key: wait, or use another model or key"
    if status is None and re.search(r"connection|fetch failed|timed? ?out|network", said, re.I):
        return (
            reason
            + f"; pi cannot reach the API of {provider}: check its address (baseUrl in models.json) and the network"
        )
    return reason


def _takes_input(screen: str) -> bool:
    """Its editor is up: the two rules it is drawn between."""
    return len(_BORDER.findall(screen)) >= 2


def _retries(env: Mapping[str, str], cwd: Path) -> tuple[int, float]:
    """How many times pi retries a failed call, and its first wait in seconds (doubled at each
    try), as its settings say: its own folder's, then the project's (.pi/settings.json)."""
    retry: dict[str, Any] = {}
    for path in (usage_pi.agent_dir(env) / "settings.json", cwd / ".pi" / "settings.json"):
        try:
            given = json.loads(read_bytes(path).decode("utf-8")).get("retry")  # a file agents may write
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(given, dict):
            retry.update(given)
    if retry.get("enabled") is False:
        return 0, 0.0
    tries = retry.get("maxRetries", DEFAULT_RETRIES)
    wait = retry.get("baseDelayMs", DEFAULT_RETRY_WAIT_MS)
    tries = tries if isinstance(tries, int) and not isinstance(tries, bool) and tries >= 0 else DEFAULT_RETRIES
    wait = (
        wait if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait >= 0 else DEFAULT_RETRY_WAIT_MS
    )
    return tries, wait / 1000


class _Finished:
    """The `pane_watch` of pi: its session file shows, after the paste, a reply that ends the model's
    turn (it asks for no tool), or a failed call pi will not try again (more failures in a row than
    it retries, or none written since it would have tried again). The tokens are the turn's so far;
    the cost, this delivery's, as pi priced it."""

    def __init__(self, session: Session, message: Message, file: Path, retries: tuple[int, float]) -> None:
        self.session = session
        self.file = file
        self.offset: int = size_of(file)
        if session.data.get("pane_turn") != message.turn:
            session.data["pane_turn"], session.data["pane_turn_offset"] = message.turn, self.offset
        self.turn_offset: int = session.data["pane_turn_offset"]
        self.retries: int = retries[0]
        self.first_wait: float = retries[1]
        self.quiet: tuple[int, float] | None = None  # the file's size, and since when it is that

    def __call__(self) -> Stopped | None:
        try:
            if self.session.id is None:
                self.session.id = usage_pi.session_id(self.file)  # pi writes it with the first reply
            last, failures = _since(self.file, self.offset)
            if last is None:
                return None
            if last.get("stopReason") == "error":
                if not self._given_up(failures):
                    return None
            elif last.get("stopReason") not in ("stop", "length", "aborted"):
                return None
            turn = usage_pi.read_usage(self.file, self.turn_offset)
            delivery = usage_pi.read_usage(self.file, self.offset)
        except OSError:
            return None
        usage = None
        if turn.calls:
            models = [name for name in turn.by_model if name]
            model = models[0] if len(models) == 1 else self.session.model
            tokens = {kind: turn.tokens[kind] for kind in ("input", "cached", "cache_write", "output")}
            usage = turn_usage(model, tokens, models=models)
        cost = delivery.cost if delivery.calls else None
        if last.get("stopReason") == "error":
            return Stopped(failed=_error_reason(last, failures - 1, self.session), usage=usage, cost=cost)
        return Stopped(usage=usage, cost=cost)

    def _given_up(self, failures: int) -> bool:
        """Whether pi is done with a call that failed `failures` times in a row: it retries no more, or
        the file has stayed the same for longer than pi waits before it tries again."""
        if failures > self.retries:
            return True
        size = size_of(self.file)
        if self.quiet is None or self.quiet[0] != size:
            self.quiet = (size, time.monotonic())
            return False
        wait = self.first_wait * 2.0 ** (failures - 1) + RETRY_SETTLE
        return time.monotonic() - self.quiet[1] >= wait


def _since(file: Path, offset: int) -> tuple[dict[str, Any] | None, int]:
    """The model's last reply after byte `offset`, once a message was sent to it after that byte and
    nothing was sent since (None otherwise), and how many failed calls in a row end the file."""
    asked = False
    last: dict[str, Any] | None = None
    failures = 0
    for _, line in read_lines(file, offset, None):
        message = line.get("message")
        if line.get("type") != "message" or not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            last = message
            failures = failures + 1 if message.get("stopReason") == "error" else 0
        elif message.get("role") == "user":
            asked, last, failures = True, None, 0
        else:
            last = None  # a tool's result: the model is asked again
    return (last if asked else None), failures


HARNESS = PiHarness
