"""awf.source_of: a short digest of a function's source text, a stage's cache_key when its value
depends on code of the workflow's own (a tool, a prompt builder)."""

from __future__ import annotations

import hashlib
import inspect
import textwrap
from collections.abc import Callable

from .errors import WorkflowError


def source_of(fn: Callable[..., object]) -> str:
    """16 hex digits of the sha256 of `fn`'s source text, read with inspect.getsource.

    It changes when the function's text does (its body, its signature, a comment in it), and
    not when the function moves in its file or is indented differently. Only `fn`'s own text
    counts, not the functions it calls: give each its own `source_of` in a list for a key on
    several."""
    target = inspect.unwrap(fn)
    try:
        text = inspect.getsource(target)
    except (OSError, TypeError) as error:
        name = getattr(target, "__qualname__", repr(target))
        raise WorkflowError(
            f"awf.source_of: the source of {name} cannot be read ({error}); give cache_key= a value of your own"
        ) from None
    # Line ends and indentation are layout: a file saved on another system, or a function moved
    # into a class, is the same code.
    lines = [line.rstrip() for line in textwrap.dedent(text).splitlines()]
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]
