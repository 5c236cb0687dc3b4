"""The run's sandbox: the profile `--sandbox` gives a new run, kept by every continue, checked
before anything is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import Refusal


def requested(given: str | None, cwd: Path) -> Any:
    """The profile a new run is started with (None without one); Refusal when it cannot be used."""
    if given is None:
        return None
    from ..agents.sandbox_profile import ProfileError, parse

    try:
        profile = parse(given, cwd)
    except ProfileError as error:
        raise Refusal(f"{error}\nNothing was recorded; fix the profile and run again") from None
    _refuse_if_unavailable(profile)
    return profile


def kept(given: str | None, recorded: dict[str, Any] | None, cwd: Path, run: str) -> Any:
    """The profile a continue runs with: the run's own; Refusal when `given` is another."""
    if given is None and recorded is None:
        return None
    from ..agents.sandbox_profile import NONE, ProfileError, from_record, parse

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


def _refuse_if_unavailable(profile: Any) -> None:
    if profile is None:
        return
    from ..agents.sandbox import unavailable

    problem = unavailable()
    if problem:
        raise Refusal(f"--sandbox {profile.name} cannot confine agents on this machine: {problem}")
