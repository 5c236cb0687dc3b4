"""The run folder: layout, atomic writes, the log, locks, liveness and schemas.

This layer knows nothing of workflows or agents; it stores and reads what the engine decides.
"""
