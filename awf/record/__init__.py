"""The run folder: layout, atomic writes, the log, locks, liveness and schemas.

This layer knows nothing of workflows or agents; it stores and reads what the engine decides.

Internal to awf: a workflow imports nothing from here (its public names are in `awf`,
`awf.agents` and `awf.testing`), hence the empty `__all__`.
"""

__all__: list[str] = []
