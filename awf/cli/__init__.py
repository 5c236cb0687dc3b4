"""The command line: parses, calls the engine, reports, and exits with the seeds' codes.

Internal to awf: a workflow imports nothing from here (its public names are in `awf`,
`awf.agents` and `awf.testing`), hence the empty `__all__`.
"""

__all__: list[str] = []
