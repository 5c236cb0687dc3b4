"""How a test points the real agent CLIs at the fake model, and nowhere else.

Each CLI is found as awf finds it: the path in AWF_CLAUDE / AWF_CODEX / AWF_GEMINI ..., else on PATH.
`.ci/install-agent-clis DIR` installs the pinned versions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

FAKE_KEY = "sk-fake-model-key"
OPENCODE_VERSION = "1.18.33"  # its pin in .ci/install-agent-clis
CODEX_KEY_VARIABLE = "FAKE_MODEL_API_KEY"

# Inherited settings that would send a CLI to a real provider or change how it authenticates.
_FOREIGN = (
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "CLAUDE_CONFIG_DIR",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "CODEX_HOME",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GEMINI_CLI_HOME",
    "GEMINI_MODEL",
    "PI_CODING_AGENT_DIR",
    "PI_CODING_AGENT_SESSION_DIR",
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENCODE_CONFIG_CONTENT",
    "OPENCODE_DB",
    "OPENCODE_PERMISSION",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "GITHUB_SHA",  # makes Gemini CLI strip every variable but its own from the commands it runs
)


def find(name: str) -> str | None:
    """The program awf would run for `name` ("claude" or "codex"), or None when it is not installed."""
    configured = os.environ.get(f"AWF_{name.upper()}")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which(name)


def require(name: str) -> str:
    """The program's path; skips the test, saying how to install it, when it is missing."""
    program = find(name)
    if program is None:
        pytest.skip(
            f'the real {name} CLI is not installed: export PATH="$(.ci/install-agent-clis .cache/agent-clis):$PATH" '
            f"(needs node and npm; or set AWF_{name.upper()} to its program); .ci/run does it and runs every test"
        )
    return program


def base_env() -> dict[str, str]:
    """The test process's environment without anything that points a CLI at a real provider."""
    env = {key: value for key, value in os.environ.items() if key not in _FOREIGN}
    # CI machines say CI=true, and some CLIs change how they behave on it: here as there.
    env["CI"] = "true"
    return env


def claude_env(url: str, home: Path) -> dict[str, str]:
    """Settings that send Claude Code to the fake model at `url`, with its config and transcripts under `home`.

    HOME is its config folder (~/.claude.json, ~/.claude/projects/...); the API key means no login;
    the rest keep it from calling anything but the model (telemetry, updates, error reports, the
    start-up hello) and make failures quick (one retry, a short request timeout).
    """
    return {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "1",
        "API_TIMEOUT_MS": "20000",
    }


def codex_env(home: Path) -> dict[str, str]:
    """Codex keeps its config, sessions and state under CODEX_HOME; the provider reads its key from the env.

    HOME too: codex runs the user's login shell (`bash -lc`, and once to take a snapshot of its
    environment), and the machine's own dotfiles must not reach a test. A `pyenv rehash` in them
    waits a minute on a lock a killed shell left, and strace waits with it.
    """
    return {"HOME": str(home), "CODEX_HOME": str(home), CODEX_KEY_VARIABLE: FAKE_KEY}


def codex_config(url: str, *, retries: int = 1, idle_ms: int = 20000) -> list[str]:
    """`-c` options (they go before `exec`'s `resume`) that define a provider for the fake model and use it.

    Also turned off: plugins and analytics, the two things that reach for other hosts at start-up.
    `retries` bounds codex's own retries of a failed request and of a broken stream; it does not
    bound its endless reconnecting when the server cannot be reached at all.
    """
    settings = _codex_settings(url, retries, idle_ms)
    return [part for key, value in settings.items() for part in ("-c", f"{key}={value}")]


def write_codex_config(home: Path, url: str, *, retries: int = 1, idle_ms: int = 20000) -> None:
    """The same settings as a user's $CODEX_HOME/config.toml, for the plain "codex" runtime."""
    home.mkdir(parents=True, exist_ok=True)
    lines = [f"{key} = {value}" for key, value in _codex_settings(url, retries, idle_ms).items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def _codex_settings(url: str, retries: int, idle_ms: int) -> dict[str, str]:
    """Dotted keys and TOML values."""
    return {
        "model_provider": '"fake"',
        "model_providers.fake.name": '"fake model"',
        "model_providers.fake.base_url": f'"{url}/v1"',
        "model_providers.fake.wire_api": '"responses"',
        "model_providers.fake.env_key": f'"{CODEX_KEY_VARIABLE}"',
        "model_providers.fake.request_max_retries": str(retries),
        "model_providers.fake.stream_max_retries": str(retries),
        "model_providers.fake.stream_idle_timeout_ms": str(idle_ms),
        "features.plugins": "false",
        "analytics.enabled": "false",
    }


def gemini_env(url: str, home: Path) -> dict[str, str]:
    """Settings that send Gemini CLI to the fake model at `url`, with its settings and sessions
    under `home` (GEMINI_CLI_HOME), which `write_gemini_settings` fills."""
    return {"GEMINI_CLI_HOME": str(home), "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": FAKE_KEY}


def write_gemini_settings(home: Path, *, attempts: int = 2) -> None:
    """A user's ~/.gemini/settings.json for the fake model: the API key as the way to log in (a base
    URL alone is not one), and nothing that reaches for another host (usage statistics, telemetry,
    the update check). `attempts` bounds its retries of a failed model call."""
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": attempts},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))


def pi_env(url: str, home: Path, *, timeout_ms: int = 20000) -> dict[str, str]:
    """Settings that send pi to the fake model at `url` (its Anthropic provider, given that base URL in
    models.json), with its folder, settings and sessions under `home` (HOME too: pi reads skills
    and context files from there). Offline: no update check, no install ping, no download of the
    search tools its terminal UI would fetch. One retry of a failed call, and a request that gets
    no answer gives up after `timeout_ms`."""
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": url}}}))
    settings = {
        "enableInstallTelemetry": False,
        "retry": {"maxRetries": 1, "provider": {"timeoutMs": timeout_ms, "maxRetries": 1}},
    }
    (agent / "settings.json").write_text(json.dumps(settings))
    return {
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(agent),
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
    }


def opencode_env(url: str, home: Path, *, timeout_ms: int = 20000) -> dict[str, str]:
    """Settings that send opencode to the fake model at `url`, with its config, data and cache under
    `home` (XDG folders there), which they fill.

    opencode's built-in Anthropic provider is kept (its catalog prices the model), and the model
    sent to the fake: a model's own `provider.api` is the base URL opencode's Anthropic SDK gets
    (the provider's `options.baseURL` is not, for a provider its catalog knows), and that model
    also titles the session (`small_model`, else a small model at the catalog's address). Nothing reaches
    for another host: the catalog is the one built in (no fetch of models.dev), no update check,
    no language server download, no sharing; and the npm install of its plugin SDK it starts in
    its config folder finds that folder's packages already installed. A request that gets no
    answer gives up after `timeout_ms`.
    """
    config = home / ".config" / "opencode"
    (config / "node_modules").mkdir(parents=True, exist_ok=True)
    plugin = {"@opencode-ai/plugin": OPENCODE_VERSION}
    (config / "package.json").write_text(json.dumps({"dependencies": plugin}))
    (config / "package-lock.json").write_text(json.dumps({"packages": {"": {"dependencies": plugin}}}))
    model = {"provider": {"npm": "@ai-sdk/anthropic", "api": f"{url}/v1"}}
    settings = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": "anthropic/claude-sonnet-4-5",
        # The model that titles a session: else the provider's smallest, at its catalog's address.
        "small_model": "anthropic/claude-sonnet-4-5",
        "provider": {
            "anthropic": {
                "options": {"apiKey": FAKE_KEY, "timeout": timeout_ms},
                "models": {"claude-sonnet-4-5": model},
            }
        },
    }
    (config / "opencode.json").write_text(json.dumps(settings))
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    }


@dataclass(frozen=True)
class CliSetup:
    """How the tests point one harness's real CLI at the fake model, headless and in a pane."""

    name: str
    # Options every test's runtime gives the harness, to keep a test short (never what it checks).
    runtime: Mapping[str, Any] = field(default_factory=dict)

    def env(self, url: str, home: Path, *, patient: bool = False) -> dict[str, str]:
        """The environment (over base_env) that sends the CLI to the fake model at `url`, with all
        its state under `home`. `patient`: it waits minutes on a model that says nothing, where a
        test cuts the turn short first."""
        raise NotImplementedError

    def first_start(self, home: Path, cwd: Path) -> None:
        """What a person answers when the CLI's terminal UI first starts in `cwd`, written into its
        config under `home`, so no question waits for keystrokes in a pane."""
        raise NotImplementedError


class ClaudeSetup(CliSetup):
    def env(self, url: str, home: Path, *, patient: bool = False) -> dict[str, str]:
        home.mkdir(parents=True, exist_ok=True)
        return {**claude_env(url, home), **({"API_TIMEOUT_MS": "600000"} if patient else {})}

    def first_start(self, home: Path, cwd: Path) -> None:
        """Onboarding done, the API key approved, the folder trusted (~/.claude.json)."""
        home.mkdir(parents=True, exist_ok=True)
        config = {
            "hasCompletedOnboarding": True,
            "theme": "dark",
            "customApiKeyResponses": {"approved": [FAKE_KEY[-20:]], "rejected": []},
            "projects": {str(cwd): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
        }
        (home / ".claude.json").write_text(json.dumps(config))


class CodexSetup(CliSetup):
    def env(self, url: str, home: Path, *, patient: bool = False) -> dict[str, str]:
        write_codex_config(home, url, idle_ms=600000 if patient else 20000)
        return codex_env(home)

    def first_start(self, home: Path, cwd: Path) -> None:
        """The folder a git checkout (where Codex asks whether to trust it), and trusted in config.toml."""
        cwd.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(cwd)], check=True)
        with (home / "config.toml").open("a") as config:
            config.write(f'\n[projects.{json.dumps(str(cwd))}]\ntrust_level = "trusted"\n')


class GeminiSetup(CliSetup):
    def env(self, url: str, home: Path, *, patient: bool = False) -> dict[str, str]:
        write_gemini_settings(home)
        return gemini_env(url, home)

    def first_start(self, home: Path, cwd: Path) -> None:
        """Nothing: the API key is its login, and awf trusts the folder for it (--skip-trust)."""


class PiSetup(CliSetup):
    def env(self, url: str, home: Path, *, patient: bool = False) -> dict[str, str]:
        return pi_env(url, home, timeout_ms=600000 if patient else 20000)

    def first_start(self, home: Path, cwd: Path) -> None:
        """Nothing: pi asks nothing on a first start (it trusts any folder, and the key is its login)."""


class OpencodeSetup(CliSetup):
    def env(self, url: str, home: Path, *, patient: bool = False) -> dict[str, str]:
        return opencode_env(url, home, timeout_ms=600000 if patient else 20000)

    def first_start(self, home: Path, cwd: Path) -> None:
        """Nothing: opencode asks nothing on a first start (the key in its config is its login)."""


# A model genai-prices knows: a turn's cost read from its session file is priced by it.
CLAUDE = ClaudeSetup("claude", runtime={"model": "claude-sonnet-4-5"})
# Codex reconnects forever to a model it cannot reach; awf ends it after reconnect_limit seconds.
CODEX = CodexSetup("codex", runtime={"reconnect_limit": 3})
# Gemini CLI's own default routes each prompt between models through a side request: the tests
# name one model. It retries a model it cannot reach; awf ends it after retry_limit seconds.
GEMINI = GeminiSetup("gemini", runtime={"model": "gemini-2.5-flash", "retry_limit": 3})
# pi's own Anthropic provider, sent to the fake model: the model is one pi has a price for.
PI = PiSetup("pi", runtime={"model": "claude-sonnet-4-5"})
# opencode's built-in Anthropic provider, its model sent to the fake model: its catalog prices it.
# It retries a model it cannot reach; awf ends it after retry_limit seconds.
OPENCODE = OpencodeSetup("opencode", runtime={"model": "anthropic/claude-sonnet-4-5", "retry_limit": 3})

# Each CLI's setup by its harness's name.
SETUPS = {setup.name: setup for setup in (CLAUDE, CODEX, GEMINI, PI, OPENCODE)}
