"""`awf set WORKFLOW/ID STAGE [FILE|-]`: give a stage's record a value by hand, checked first.

The value is read from FILE, stdin (`-`, or no FILE), or written in `$VISUAL`/`$EDITOR` (`--edit`)
on a copy of the current one. A value that does not fit is refused with every problem listed, and
nothing is written; one that fits replaces the record atomically, with an `edited` line in run.jsonl.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..engine.errors import Refusal
from ..engine.set_value import BadValue, current_value, set_value
from . import output
from .errors import CommandError, ExitCode, Problem
from .run_target import Where, find_run


def set_command(
    *, target: str, stage: str, file: str | None, edit: bool, cwd: Path | None, run_root: Path | None
) -> int:
    paths = find_run(target, Where.of(cwd, run_root))
    if edit and file is not None:
        raise CommandError("--edit takes no FILE: the value is written in the editor", Problem.USAGE)
    value = _edited(current_value(paths, stage).get("value"), stage) if edit else _read(file)
    try:
        done = set_value(paths, stage, value)
    except BadValue as bad:
        listed = "\n".join(f"  {problem}" for problem in bad.problems)
        raise CommandError(f"{bad}\n{listed}", Problem.REFUSED) from None
    output.error_line(f"set stage {stage} of {paths.name} (sha256 {done.old[:12]} → {done.new[:12]})")
    if done.after:
        output.error_line(
            f"{', '.join(done.after)} {'was' if len(done.after) == 1 else 'were'} computed from the old value and "
            f"a continue reuses {'it' if len(done.after) == 1 else 'them'}; "
            f"to redo {'it' if len(done.after) == 1 else 'them'}, continue with --from-stage {done.after[0]}"
        )
    return int(ExitCode.OK)


def _read(file: str | None) -> Any:
    """The value in FILE, or on stdin for `-` or no FILE, as JSON."""
    name = "stdin" if file in (None, "-") else file
    try:
        text = sys.stdin.read() if file in (None, "-") else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise Refusal(f"{name} cannot be read: {error}") from None
    return _parsed(text, name)


def _parsed(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise Refusal(
            f"{name} is not JSON: {error.msg} at line {error.lineno} column {error.colno}; nothing was written"
        ) from None


def _edited(value: Any, stage: str) -> Any:
    """The value as the person leaves it in their editor, started on an indented copy of it."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        raise Refusal("--edit opens $VISUAL or $EDITOR, and neither is set: set one, or give the value in a file")
    with tempfile.TemporaryDirectory(prefix="awf-set-") as folder:
        copy = Path(folder) / f"{stage}.json"
        copy.write_text(json.dumps(value, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        try:
            done = subprocess.run([*shlex.split(editor), str(copy)], check=False)
        except OSError as error:
            raise Refusal(f"the editor {editor} could not start: {error}") from None
        if done.returncode != 0:
            raise Refusal(f"the editor {editor} exited {done.returncode}; nothing was written")
        return _parsed(copy.read_text(encoding="utf-8"), f"the value written in {editor}")
