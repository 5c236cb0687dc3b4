"""Runs that park and wake: `waits.py` is `wf.events`, `attempt.py` an attempt's events (the redo
mark, what a parked run waits for), `wakes.py` the one path by which a run's next attempt is
started by `awf send`, `awf wake` and `awf serve`, and `retries.py` the stops worth retrying."""
