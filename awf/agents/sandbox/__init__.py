"""Sandboxes: an agent's processes under bubblewrap. `profile.py` reads a profile and `limits.py`
its limits; `wrap.py` makes each process a sandbox, with its tree planned by `mounts.py` and its
filter by `seccomp.py`; `launch.py` (outside) and `init.py` (inside) are scripts run with
`python -I -S`, and `net.py` is the gateway that carries the sandbox's connections."""
