"""The engine: attempts, the stage plan, endings, signals and deadlines, and the Context.

Internal to awf: a workflow imports nothing from here (its public names are in `awf`,
`awf.agents` and `awf.testing`), hence the empty `__all__`.
"""

__all__: list[str] = []
