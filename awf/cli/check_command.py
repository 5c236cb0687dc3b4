"""`awf check`: the rules of a stage a workflow file breaks, read from its source without running it."""

from __future__ import annotations

import json

from ..engine.check import Finding, check_source
from ..engine.loader import split_target
from . import output
from .errors import CommandError, ExitCode, Problem


def check_command(*, file: str, json_out: bool) -> int:
    path, _ = split_target(file)
    if path.is_dir():
        raise CommandError(f"{path} is a folder; give the workflow's .py file", Problem.WORKFLOW_FILE)
    try:
        source = path.read_bytes()
    except FileNotFoundError:
        raise CommandError(f"workflow file {path} does not exist", Problem.WORKFLOW_FILE) from None
    except OSError as problem:
        raise CommandError(f"{path} cannot be read: {problem.strerror or problem}", Problem.WORKFLOW_FILE) from None
    try:
        findings = check_source(source, str(path))
    except SyntaxError as problem:
        where = f"{path}:{problem.lineno}" if problem.lineno else str(path)
        raise CommandError(f"{where}: SyntaxError: {problem.msg}", Problem.WORKFLOW_FILE) from None
    except ValueError as problem:  # a NUL byte, which the parser of Python 3.11 refuses this way
        raise CommandError(f"{path}: {problem}", Problem.WORKFLOW_FILE) from None
    if json_out:
        output.result(json.dumps([finding.data(str(path)) for finding in findings], ensure_ascii=False, indent=2))
    else:
        for finding in findings:
            output.result(finding.text(str(path)))
    return int(ExitCode.FAILED if findings else ExitCode.OK)


# A workflow may go without a version (awf check says it should): not worth a warning at every attempt.
NOT_WARNED = frozenset({"no-version"})


def warnings_of(file: str) -> list[str]:
    """What `awf check` would say of the workflow `awf run` is about to load, for the attempt to
    say as it starts.

    One read and one parse of the file; the run goes on whatever is found, and a file that cannot
    be read or parsed is left for the loader, which says what is wrong with it."""
    path, _ = split_target(file)
    findings: list[Finding]
    try:
        findings = check_source(path.read_bytes(), str(path))
    except Exception:  # a check that cannot read the file must not stop the run it only advises
        return []
    return [f"warning: {finding.text(str(path))}" for finding in findings if finding.rule not in NOT_WARNED]
