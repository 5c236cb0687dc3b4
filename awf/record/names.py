"""The rules for ids and names, checked before any of them becomes a path."""

from __future__ import annotations

import re

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
_STAGE = re.compile(r"[a-z0-9._@-]{1,128}")


def id_problem(value: str, what: str = "id") -> str | None:
    """Why `value` is not a valid run id or workflow name, or None when it is."""
    if not isinstance(value, str) or not value:
        return f"{what} is empty"
    if len(value) > 128:
        return f"{what} {value[:40]!r}… is {len(value)} characters long; the limit is 128"
    if not _ID.fullmatch(value):
        return (
            f"{what} {value!r} may hold only letters, digits, '.', '_', '@' and '-', "
            "and must start with a letter or digit"
        )
    return None


_AGENT_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}")


def agent_key_problem(value: str) -> str | None:
    """Why `value` is not a valid agent key, or None. Keys are ids that may also hold ':'
    (`review:1`, `review:2`), so a family of agents is named, and scripted, together."""
    if not isinstance(value, str) or not _AGENT_KEY.fullmatch(value):
        return (
            f"agent key {value!r} may hold only letters, digits, '.', '_', '@', ':' and '-', "
            "start with a letter or digit, and be up to 128 characters"
        )
    return None


def stage_name_problem(value: object) -> str | None:
    """Why `value` is not a valid stage name, or None when it is."""
    if not isinstance(value, str):
        return f"a stage name must be a string, not {type(value).__name__}"
    if not _STAGE.fullmatch(value) or value in {".", ".."}:
        return (
            f"stage name {value!r} may hold only lowercase letters, digits, '.', '_', '@' and '-' "
            "(1 to 128 of them, and not '.' or '..')"
        )
    return None
