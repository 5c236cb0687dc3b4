"""How an attempt shows its progress and its ending to a person.

Internal to awf: a workflow imports nothing from here (its public names are in `awf`,
`awf.agents` and `awf.testing`), hence the empty `__all__`.
"""

__all__: list[str] = []
