"""awf: durable workflows of coding agents.

A workflow is an `async def run(wf, **args)` decorated with `@awf.workflow(...)`. Each step
worth keeping is a stage: `await wf.stage(name, work, result=SCHEMA)`. A run that stops
part-way goes on with `awf run FILE --id ID --continue`, reusing every stage that succeeded.
"""

from __future__ import annotations

from .engine.context import Context
from .engine.errors import Stop, WorkflowError
from .engine.workflow import Workflow, workflow

__version__ = "0.1.0"

__all__ = ["Context", "Stop", "Workflow", "WorkflowError", "__version__", "workflow"]
