"""What an agent used, as its CLI's own session file says: tokens by model, and what they cost.

Claude Code and codex each keep a session file, appended as the agent works: every model call's
tokens are in it, whether or not the CLI lived to print its result. A reader per harness
(usage_claude, usage_codex) sums the calls between two byte offsets of that file into a
`SessionUsage`; this module holds what every such reader shares: the sum, the one reading of a
session file's lines, and the prices (genai-prices), where a model with no known price costs
null, with why.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..record.files import open_read

TOKEN_KINDS = ("input", "cached", "cache_write", "output", "reasoning")


@dataclass
class SessionUsage:
    """Tokens by model, from one stretch of a session file.

    `input` counts every prompt token, those read from a cache (`cached`) and those written to
    one (`cache_write`) among them; `reasoning` is the part of `output` spent thinking.
    """

    by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    calls: int = 0  # model calls counted

    def add(self, model: str, tokens: dict[str, int]) -> None:
        held = self.by_model.setdefault(model, dict.fromkeys(TOKEN_KINDS, 0))
        for kind in TOKEN_KINDS:
            held[kind] += int(tokens.get(kind, 0))
        self.calls += 1

    @property
    def tokens(self) -> dict[str, int]:
        return {kind: sum(model[kind] for model in self.by_model.values()) for kind in TOKEN_KINDS}

    def priced(self, provider: str) -> tuple[float | None, str | None, dict[str, Any]]:
        """(cost in US dollars or None, why it is unknown, tokens and cost by model)."""
        total: float | None = 0.0
        why: list[str] = []
        models: dict[str, Any] = {}
        for model, tokens in self.by_model.items():
            cost, problem = price(provider, model, tokens)
            models[model] = {**tokens, "cost": cost}
            if cost is None:
                total = None
                why.append(problem or f"no price for {model}")
            elif total is not None:
                total += cost
        return total, "; ".join(why) or None, models

    def as_record(self, provider: str) -> dict[str, Any]:
        """The fields of a `usage` line: tokens, cost (null with `cost_unknown` when it is not known),
        and the same by model."""
        cost, why, models = self.priced(provider)
        record: dict[str, Any] = {"tokens": self.tokens, "cost": cost, "models": models, "calls": self.calls}
        if why:
            record["cost_unknown"] = why
        return record


def read_lines(path: Path, start: int = 0, end: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of `path` that start at or after byte `start` and end by byte `end` (the
    end of the file when None), each with the byte it starts at. A last line with no newline (the
    CLI is writing it, or died while it did) and a line that is not JSON are passed over: neither
    is a call awf can count."""
    with open_read(path) as handle:
        handle.seek(start)
        data = handle.read() if end is None else handle.read(max(end - start, 0))
    offset = start
    for raw in data.splitlines(keepends=True):
        at, offset = offset, offset + len(raw)
        if not raw.endswith(b"\n"):
            return
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if isinstance(item, dict):
            yield at, item


def whole(value: Any) -> int:
    """A token count as the CLI wrote it, or 0 when it wrote none."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def price(provider: str, model: str | None, tokens: dict[str, int]) -> tuple[float | None, str | None]:
    """US dollars for these tokens of `model` from `provider` ("anthropic", "openai"), by
    genai-prices; or None and why not."""
    if not model:
        return None, "the model is the CLI's own default, which awf does not know to price"
    try:
        from genai_prices import Usage, calc_price  # a large table: loaded only to price a turn
    except ImportError:
        return None, "genai-prices is not installed (pip install genai-prices)"
    try:
        priced = calc_price(
            Usage(
                input_tokens=tokens.get("input", 0),
                cache_read_tokens=tokens.get("cached", 0),
                cache_write_tokens=tokens.get("cache_write", 0),
                output_tokens=tokens.get("output", 0),
            ),
            model_ref=model,
            provider_id=provider,
        )
    except LookupError:
        return None, f"genai-prices {_version()} has no price for {model}"
    return float(priced.total_price), None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("genai-prices")
    except PackageNotFoundError:
        return "(unknown version)"
