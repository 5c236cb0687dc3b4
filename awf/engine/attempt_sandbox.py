"""The run's sandbox: the profile `--sandbox` gives a new run, kept by every continue, checked
before anything is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..record.entries import AttemptStartLine, SandboxRecord
from .errors import Refusal


def requested(given: str | None, cwd: Path, made: Path | None = None) -> Any:
    """The profile a new run is started with (None without one); Refusal when it cannot be used.
    `made`: the run's worktree, made as its first attempt starts."""
    if given is None:
        return None
    from ..agents.sandbox.profile import ProfileError, parse

    try:
        profile = parse(given, cwd, made)
    except ProfileError as error:
        raise Refusal(f"{error}\nNothing was recorded; fix the profile and run again") from None
    _refuse_if_unavailable(profile)
    return profile


def kept(
    given: str | None, recorded: SandboxRecord | None, cwd: Path, run: str, first: AttemptStartLine | None = None
) -> Any:
    """The profile a continue runs with: the run's own; Refusal when `given` is another, or when the
    run line says other than its first attempt ran with (`first`, that attempt's start line) and
    `given` does not confirm the run line."""
    from ..agents.sandbox.profile import NONE, ProfileError, from_record, parse

    if first is not None and "sandbox" in first and first["sandbox"] != recorded and given is None:
        raise Refusal(_changed(run, recorded, first["sandbox"]))
    if given is None and recorded is None:
        return None
    profile = from_record(recorded)
    if given is not None:
        try:
            asked = parse(given, cwd)
        except ProfileError as error:
            raise Refusal(str(error)) from None
        if (asked is None) != (profile is None) or (asked and profile and not asked.same_rules(profile)):
            was = profile.name if profile is not None else NONE
            raise Refusal(
                f"run {run} was started with --sandbox {was}, not {given}: a continue keeps the run's sandbox; "
                "drop --sandbox to continue, or start a new run"
            )
    _refuse_if_unavailable(profile)
    return profile


def _changed(run: str, recorded: SandboxRecord | None, first: SandboxRecord | None) -> str:
    def name(profile: SandboxRecord | None) -> str:
        return "none" if profile is None else profile.get("profile") or "a profile"

    return (
        f"run {run}'s run line says --sandbox {name(recorded)}, but its first attempt ran with --sandbox "
        f"{name(first)}: the record was changed since, by hand or by something that could write it; "
        f"nothing was started.\nGive --sandbox {name(recorded)} to continue with what the run line says, "
        "or put the first attempt's sandbox back in the run line"
    )


def _refuse_if_unavailable(profile: Any) -> None:
    if profile is None:
        return
    from ..agents.sandbox.wrap import unavailable

    problem = unavailable()
    if problem:
        raise Refusal(f"--sandbox {profile.name} cannot confine agents on this machine: {problem}")
