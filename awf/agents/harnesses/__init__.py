"""awf's own harnesses, one module a kind of agent (`awf.agents.harnesses.{name}`, found by the
registry by its runtime's name), each with the reader of its CLI's session files beside it
(`{name}_usage.py`). They sit on the harness kit one level up: `harness.py`, `kit.py`,
`headless.py`, `panes.py` and `usage.py`."""
