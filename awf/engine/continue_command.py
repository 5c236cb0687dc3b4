"""The continue another process runs to make an attempt that a start here readied (on a Ray node,
or from the queue `awf serve` starts)."""

from __future__ import annotations

from pathlib import Path

from ..record.layout import RunPaths
from .request import RunRequest


def continue_words(request: RunRequest, paths: RunPaths) -> list[str]:
    """The words after `awf` of the continue that makes the attempt a start elsewhere readied."""
    words = ["run", str(Path(request.target).absolute()), "--id", paths.id, "--continue"]
    words += ["--run-root", str(paths.root)]
    if request.from_stage:
        words += ["--from-stage", request.from_stage]
    if request.to_stage:
        words += ["--to-stage", request.to_stage]
    for skip in request.skip_stages:
        words += ["--skip-stage", skip]
    if request.values_file is not None:
        words += ["--values", str(request.values_file.absolute())]
    if request.timeout_text:
        words += ["--timeout", request.timeout_text]
    if request.max_cost_text:
        words += ["--max-cost", request.max_cost_text]
    if request.max_agents_text:
        words += ["--max-agents", request.max_agents_text]
    if request.end_leftovers:
        words.append("--end-leftovers")
    if request.ignore_leftovers:
        words.append("--ignore-leftovers")
    return words
