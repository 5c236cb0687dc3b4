"""A fake model server for tests: the real `claude` and `codex` CLIs talk to it instead of a provider."""

from .replies import Reply, Shell, Silence, Status, Text, Tool, Usage
from .server import NOTHING_SCRIPTED, FakeModel, Request, unused_port

__all__ = [
    "NOTHING_SCRIPTED",
    "FakeModel",
    "Reply",
    "Request",
    "Shell",
    "Silence",
    "Status",
    "Text",
    "Tool",
    "Usage",
    "unused_port",
]
