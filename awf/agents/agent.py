"""`wf.agents` and the agents it opens: each agent keeps its session, its channel and its turn count."""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..record import entries
from ..record.entries import RuntimeOptions
from .channel import AgentChannel, agents_dir
from .harness import Harness, Session
from .host import Host
from .processes import Owner, ProcessBook
from .registry import NoHarness, harness_for, routed
from .slot_wait import slot_for
from .spec import AgentError, AgentSpec, make_spec
from .turn_outcome import Turn
from .turns import check_ask, run_turn

if TYPE_CHECKING:
    from types import UnionType
    from typing import _SpecialForm


T = TypeVar("T")


class AgentSet:
    """`wf.agents`: opens agents for this attempt, and ends them all when the attempt ends."""

    def __init__(self, host: Host) -> None:
        self._host = host
        self._agents: dict[str, Agent] = {}
        self.book: ProcessBook = ProcessBook(host.log, host.attempt)

    async def open(
        self,
        *,
        key: str,
        runtime: str | RuntimeOptions,
        instructions: str | None = None,
        cwd: str | Path | None = None,
        sandbox: str | dict[str, Any] | None = None,
    ) -> Agent:
        """The agent `key`: opened now, or the one this attempt already opened with the same spec.

        `runtime` is a harness's name ("claude", "codex") or a dict with a "harness" and its
        settings: {"harness": "exec", "command": [...]}, {"harness": "claude", "model": ...}.
        `sandbox` confines this agent otherwise than the run's --sandbox: a profile's name
        ("workspace", "read-only") or a dict of "read", "write" and "network" lists; never beyond
        what the run's --sandbox allows. None: the run's.
        """
        spec = make_spec(key, runtime, instructions, cwd, self._host.cwd, sandbox, self._host.sandbox)
        known = self._agents.get(spec.key)
        if known is not None:
            if known.spec != spec:
                raise AgentError(
                    f"agent {spec.key} is already open with {known.spec.as_record()}, not {spec.as_record()}: "
                    "one key is one agent in an attempt; give the other one a key of its own"
                )
            return known
        agent = Agent(spec, self._host, self.book)
        self._agents[spec.key] = agent
        return agent

    @property
    def opened(self) -> list[Agent]:
        """The agents this attempt opened, in the order it opened them."""
        return list(self._agents.values())

    def end_opened_in(self, stage: str) -> None:
        """End the agents opened in `stage`, and what they started: a fan-out's branch is over while
        its siblings' agents work on."""
        for agent in self._agents.values():
            if agent.stage == stage:
                agent.end()

    def end_all(self) -> None:
        """End every agent and every process any of them started. The attempt is over."""
        try:
            for agent in self._agents.values():
                agent.end()
        finally:
            self.book.end()
            for agent in self._agents.values():
                if agent.session.sandbox is not None:
                    agent.session.sandbox.close()


class Agent:
    """An agent opened in this attempt: `turn = await agent.run(prompt=..., schema=...)`."""

    def __init__(self, spec: AgentSpec, host: Host, book: ProcessBook) -> None:
        self.spec = spec
        self.key: str = spec.key
        self._host = host
        self._book = book
        self.harness: Harness | None = None
        self.unavailable: str | None = None  # why no harness can run it: each turn fails with this
        try:
            self.harness = harness_for(spec.harness, spec.runtime)
        except NoHarness as error:
            self.unavailable = str(error)
        except Exception as error:  # a harness that cannot be loaded fails turns; it must not crash the attempt
            self.unavailable = f"the {spec.harness} harness cannot be loaded: {type(error).__name__}: {error}"
        if self.harness is not None:
            problem = self.harness.spec_problem(spec.runtime)
            if problem:
                raise AgentError(f"agent {spec.key}: {problem}")
        self.dir: Path = agents_dir(host.run_dir) / str(host.attempt) / spec.key
        self.channel: AgentChannel = AgentChannel.create(
            self.dir, run=host.run, attempt=host.attempt, agent=spec.key, harness=spec.harness
        )
        self.session: Session = Session(
            spec.key,
            spec.runtime,
            spec.instructions,
            spec.cwd,
            self.dir,
            self._spawn,
            run=host.run,
            attempt=host.attempt,
            log=host.log,
        )
        if spec.sandbox is not None and self.harness is not None and not routed():
            if host.sandbox is None:  # the run's --sandbox was checked before the attempt; this one is new
                from .sandbox.wrap import unavailable

                problem = unavailable()
                if problem:
                    raise AgentError(f"agent {spec.key}'s sandbox cannot confine it on this machine: {problem}")
            self.session.sandbox = self._sandbox()
        self.turns: int = 0
        self.busy: bool = False
        self.ends: int = 0  # how many times it was ended: a turn that sees this change was cancelled
        stage = host.stage()
        self.stage: str | None = stage  # the stage it was opened in: an agent of a branch ends with it
        opened = entries.agent(
            attempt=host.attempt,
            agent=spec.key,
            harness=spec.harness,
            model=spec.model,
            **spec.as_record(),
            dir=str(self.dir),
        )
        if stage is not None:
            opened["stage"] = stage
        entries.append(host.log, opened)

    def _sandbox(self) -> Any:
        from .sandbox.wrap import AgentSandbox

        assert self.harness is not None and self.spec.sandbox is not None
        run_profile = self._host.sandbox
        sandbox = AgentSandbox(
            self.spec.sandbox,
            cwd=self.spec.cwd,
            agent_dir=self.dir,
            records=self._host.run_dir.parent.parent,
            writers=tuple(run_profile.write) if run_profile is not None else (),
            protected=self._host.protected,
        )
        sandbox.env = self.harness.sandbox_home(self.session, os.environ, sandbox.home)
        sandbox.endpoints = list(dict.fromkeys(self.harness.endpoints(self.session, os.environ)))
        return sandbox

    def _spawn(self, agent: str, command: Any, *, turn: int | None = None, **options: Any) -> Any:
        return self._book.spawn(Owner(agent, turn, self._host.stage()), command, **options)

    @overload
    async def run(
        self,
        prompt: str,
        schema: type[T],
        timeout: float | datetime.timedelta | None = None,
        label: str | None = None,
    ) -> Turn[T]: ...

    @overload
    async def run(
        self,
        prompt: str,
        schema: None = None,
        timeout: float | datetime.timedelta | None = None,
        label: str | None = None,
    ) -> Turn[str]: ...

    @overload
    async def run(
        self,
        prompt: str,
        schema: Mapping[str, Any] | str | Path | _SpecialForm | UnionType,
        timeout: float | datetime.timedelta | None = None,
        label: str | None = None,
    ) -> Turn[Any]: ...

    async def run(
        self,
        prompt: str,
        schema: object = None,
        timeout: float | datetime.timedelta | None = None,
        label: str | None = None,
    ) -> Turn[Any]:
        """Ask the agent; its answer comes back as `turn.outcome`. See awf.agents.turns.

        `schema` is a Python type (a pydantic model, a dataclass, a TypedDict, `list[X]`,
        `Literal[...]`): the answer comes back as an instance of it; or a JSON Schema dict or the
        path of a .json file: the answer comes back as plain JSON. Without one, the answer is text.
        """
        ask = check_ask(self.key, self._host, prompt=prompt, schema=schema, timeout=timeout, label=label)
        if self.busy:
            raise AgentError(
                f"agent {self.key} is in a turn already: one turn at a time for an agent; "
                "open another agent for work in parallel"
            )
        # A harness that states no capabilities (a pane's, a test's) is taken to report cost.
        capabilities = getattr(self.harness, "capabilities", None)
        reports_cost = capabilities is None or capabilities.cost is not None
        self._host.check_budget(self.key, self.turns + 1, reports_cost)
        self.busy = True
        self.turns += 1
        try:
            slot = await slot_for(self._host, self.key, self.spec.harness, self.turns)
            try:
                return await run_turn(self, self._host, ask, self.turns)
            finally:
                if slot is not None:
                    slot.release()
        finally:
            self.busy = False

    async def close(self) -> None:
        """End the agent now: its processes and its session. A later run starts it afresh."""
        self.end()

    def end(self) -> None:
        self.ends += 1
        try:
            if self.harness is not None:
                self.harness.close(self.session)
        except Exception as error:  # a harness's bug must not keep the attempt from ending: say it, go on
            why = f"{type(error).__name__}: {error}"
            message = f"the {self.spec.harness} harness could not close agent {self.key}: {why}"
            host = self._host
            entries.append(host.log, entries.log(attempt=host.attempt, message=message))
        finally:
            self._book.end(self.key)
