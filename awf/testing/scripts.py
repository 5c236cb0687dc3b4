"""Scripted agents: what each agent of a test answers, turn by turn.

A script is one reply, which meets every turn of its agent, or a list of replies, one a turn.
Scripts are keyed by agent key or by a glob ("review:*"); an exact key wins over a glob, and
an agent two globs match is a mistake in the test. Every problem here is the test's, raised as
`Failure` (an AssertionError), never a turn's outcome the workflow would have to handle.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..engine.errors import WorkflowError
from ..engine.schema import Schema, load_schema
from ..record.schemas import JsonSchema

_TEXT = object()  # the schema of a reply that answers a turn with no schema: text


class Failure(AssertionError):
    """The test fails, not the workflow: a script that does not fit the run, or a run that stalls."""


@dataclass(frozen=True)
class Turn:
    """A turn as a test sees it: in a script, the delivery being answered; in a result, how it went.

    `nudge` is true for the recovery prompt (in a script) or when one was sent (in a result).
    `outcome`, `value` and `reason` are set in a result, and None while a script answers.
    """

    agent: str
    n: int
    prompt: str
    schema: JsonSchema | None
    label: str | None
    stage: str | None
    nudge: bool
    attempt: int
    outcome: str | None = None
    value: Any = None
    reason: str | None = None

    @property
    def first_line(self) -> str:
        lines = self.prompt.strip().splitlines()
        line = lines[0] if lines else ""
        return line if len(line) <= 100 else line[:99] + "…"

    def where(self) -> str:
        """`agent reviewer, turn 1 ("Review commit ...")`, for messages."""
        delivery = ", its recovery prompt" if self.nudge and self.outcome is None else ""
        return f'agent {self.agent}, turn {self.n}{delivery} ("{self.first_line}")'


@dataclass(frozen=True)
class Reply:
    """One scripted reply. Make them with `answer(...)` and `reply.*()`."""

    kind: str  # answer, silent, blocked, failed, timed-out, hang
    schema: Any = _TEXT  # an answer's schema (a JSON Schema dict), or _TEXT for a text answer
    value: Any = None  # an answer's value, or a function of the turn that gives it
    reason: str | None = None
    loaded: Schema | None = field(default=None, compare=False, repr=False)  # writes an instance as JSON

    def plain(self) -> tuple[Any, str | None]:
        """The answer's value as plain JSON (an instance of the schema's type as its JSON form)."""
        return (self.value, None) if self.loaded is None else self.loaded.dump(self.value)

    def __str__(self) -> str:
        if self.kind != "answer":
            reason = "" if self.reason is None else repr(self.reason)
            return f"reply.{self.kind.replace('-', '_')}({reason})"
        if self.schema is _TEXT:
            return "answer(text)"
        return "answer(SCHEMA, value)"

    def resolve(self, turn: Turn) -> Reply:
        """The reply for this delivery: a function's value taken, or the reply it returned."""
        chosen: Reply = self
        for _ in range(10):
            if chosen.kind != "answer" or not callable(chosen.value):
                return chosen
            try:
                given = chosen.value(turn)
            except Exception as error:
                raise Failure(f"{turn.where()}: the script raised {type(error).__name__}: {error}") from error
            chosen = given if isinstance(given, Reply) else replace(chosen, value=given)
        raise Failure(f"{turn.where()}: the script's functions returned replies ten deep; return a value")


def answer(schema_or_text: Any, value: Any = _TEXT) -> Reply:
    """An answer to the turn.

    `answer(SCHEMA, value)` answers a turn asked with SCHEMA (the very schema the turn asks with)
    with `value`, which must fit it as a real answer must: for a Python type, an instance of it
    or its plain JSON form. `answer("text")` answers a turn with no schema. The value (or text)
    may be a function of the turn, called for each delivery; it may return a reply instead, such
    as `reply.silent()` when `not turn.nudge`.
    """
    if value is _TEXT:
        if not isinstance(schema_or_text, str) and not callable(schema_or_text):
            raise TypeError(
                "answer(text) answers a turn with no schema with text; for a turn with a schema, "
                f"give answer(SCHEMA, value), not answer({schema_or_text!r})"
            )
        return Reply("answer", _TEXT, schema_or_text)
    try:
        loaded = load_schema(schema_or_text, None, "answer(SCHEMA, value)")
    except WorkflowError as error:
        raise TypeError(f"{error}; SCHEMA is the schema the turn asks with") from None
    # As the turn records it: plain JSON.
    return Reply("answer", json.loads(loaded.text), value, loaded=loaded if loaded.typed else None)


class _Replies:
    """`reply.silent()`, `reply.blocked(reason)`, `reply.failed(reason)`, `reply.timed_out(reason)`,
    `reply.hang()`: the ways an agent does not answer."""

    @staticmethod
    def silent() -> Reply:
        """The agent stops without answering; the turn sends it the recovery prompt, as for a real one."""
        return Reply("silent")

    @staticmethod
    def blocked(reason: str) -> Reply:
        """The agent says it cannot go on (as `awf answer --blocked REASON` does)."""
        return Reply("blocked", reason=_reason(reason, "blocked"))

    @staticmethod
    def failed(reason: str) -> Reply:
        """The agent breaks (a crash, a bad exit): the turn fails with this reason."""
        return Reply("failed", reason=_reason(reason, "failed"))

    @staticmethod
    def timed_out(reason: str = "no answer by the turn's deadline") -> Reply:
        """The turn ends timed-out at once, as if its deadline had passed."""
        return Reply("timed-out", reason=_reason(reason, "timed_out"))

    @staticmethod
    def hang() -> Reply:
        """The agent works on and never stops: the turn's timeout ends it, or the test stalls."""
        return Reply("hang")


def _reason(reason: Any, kind: str) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise TypeError(f"reply.{kind}(reason): the reason is a non-empty string, not {reason!r}")
    return reason


reply: _Replies = _Replies()

Script = Reply | Sequence[Reply]
_GLOB = set("*?[")


class ScriptBook:
    """The scripts of a test, and how far each agent has got through a list. One book may serve
    several attempts of one run: a list goes on where the last attempt left it."""

    def __init__(self, agents: Mapping[str, Any] | None) -> None:
        if agents is not None and not isinstance(agents, Mapping):
            raise TypeError(f"agents= is a dict of scripts by agent key or glob, not {type(agents).__name__}")
        self.scripts: dict[str, Reply | list[Reply]] = {}
        for key, script in (agents or {}).items():
            if not isinstance(key, str) or not key:
                raise TypeError(f"agents=: a key is an agent's key or a glob such as 'review:*', not {key!r}")
            self.scripts[key] = _checked(key, script)
        self.used: dict[tuple[str, str], int] = {}  # (script key, agent key) -> list entries used

    def entry(self, turn: Turn) -> Reply:
        """The reply for this turn (the same for both deliveries of the turn). Raises Failure."""
        key = self._key_for(turn)
        script = self.scripts[key]
        if isinstance(script, Reply):
            return script
        used = self.used.get((key, turn.agent), 0)
        if used >= len(script):
            raise Failure(
                f"{turn.where()}: its script ({key!r}) has {len(script)} "
                f"entr{'y' if len(script) == 1 else 'ies'}, one a turn, and all were used: add one for this turn"
            )
        self.used[(key, turn.agent)] = used + 1
        return script[used]

    def _key_for(self, turn: Turn) -> str:
        if turn.agent in self.scripts:
            return turn.agent
        globs = [key for key in self.scripts if _GLOB & set(key) and fnmatch.fnmatchcase(turn.agent, key)]
        if len(globs) > 1:
            raise Failure(
                f"{turn.where()}: the globs {', '.join(map(repr, globs))} all match it; give it a script "
                f"of its own ({turn.agent!r}: ...), or make the globs not overlap"
            )
        if not globs:
            have = ", ".join(map(repr, self.scripts)) or "none"
            raise Failure(
                f"{turn.where()}: no script for this agent (the scripts are for: {have}); "
                f"give agents={{{turn.agent!r}: answer(...)}}"
            )
        return globs[0]

    def left_over(self) -> list[str]:
        """Each list entry never reached, as a line: a script that expected turns that never came."""
        lines = []
        for key, script in self.scripts.items():
            if isinstance(script, Reply):
                continue  # one reply meets every turn, however many: none is a fine number
            agents = sorted({agent for (script_key, agent) in self.used if script_key == key})
            if not agents:
                who = f"no agent {key}" if not _GLOB & set(key) else "no agent it matches"
                lines.append(
                    f"the script for {key!r} was never used ({who} took a turn): its "
                    f"{len(script)} entr{'y was' if len(script) == 1 else 'ies were'} never reached"
                )
            for agent in agents:
                used = self.used[(key, agent)]
                if used < len(script):
                    rest = "; ".join(f"entry {n}: {entry}" for n, entry in enumerate(script, 1) if n > used)
                    lines.append(
                        f"agent {agent} took {used} turn{'' if used == 1 else 's'} of the {len(script)} "
                        f"its script ({key!r}) has; never reached: {rest}"
                    )
        return lines


def _checked(key: str, script: Any) -> Reply | list[Reply]:
    if isinstance(script, Reply):
        return script
    if isinstance(script, Sequence) and not isinstance(script, str):
        entries = list(script)
        for n, entry in enumerate(entries, 1):
            if not isinstance(entry, Reply):
                raise TypeError(f"agents[{key!r}]: entry {n} is {entry!r}; each entry is answer(...) or reply.*()")
        if not entries:
            raise TypeError(f"agents[{key!r}] is an empty list: give one entry a turn, or drop the key")
        return entries
    raise TypeError(f"agents[{key!r}] is {script!r}; a script is answer(...), reply.*(), or a list of them, one a turn")
