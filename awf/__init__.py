"""awf: durable workflows of coding agents.

A workflow is an `async def run(wf, **args)` decorated with `@awf.workflow(...)`. Each step
worth keeping is a stage: `await wf.stage(name, work, result=SCHEMA)`. A run that stops
part-way goes on with `awf run FILE --id ID --continue`, reusing every stage that succeeded.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Loaded on first use, so `awf --version` and the commands that only read runs start fast.
_EXPORTS = {
    "workflow": "awf.engine.workflow",
    "Workflow": "awf.engine.workflow",
    "Context": "awf.engine.context",
    "Ending": "awf.engine.report",
    "Stop": "awf.engine.errors",
    "Retry": "awf.engine.errors",
    "WorkflowError": "awf.engine.errors",
    "source_of": "awf.engine.source",
}

if TYPE_CHECKING:
    from .engine.context import Context
    from .engine.errors import Retry, Stop, WorkflowError
    from .engine.report import Ending
    from .engine.source import source_of
    from .engine.workflow import Workflow, workflow

__all__ = ["Context", "Ending", "Retry", "Stop", "Workflow", "WorkflowError", "__version__", "source_of", "workflow"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'awf' has no attribute {name!r}")
