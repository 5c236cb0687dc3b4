"""Where a turn's agent keeps its session, written to run.jsonl before the agent does anything.

A turn's own line is written when it settles; a crash never lets it be. So as a turn starts, a
`turn-start` line says which session the agent is in, the file its program keeps it in, and how
long that file was (the byte the turn's use begins at). A program that names its session only
once it runs (a new codex thread) gets a `session` line as soon as awf learns it. The next
attempt reads from there what the turn used, if the turn could not record it (recovery.py).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..record import entries
from .harness import Harness, Session
from .output import size_of

LOOK_AGAIN = 1.0  # seconds between looks for the file of a session named, while it is not there


class SessionMarks:
    """The session a turn's agent is in, as recorded so far."""

    def __init__(
        self,
        harness: Harness | None,
        session: Session,
        env: Mapping[str, str],
        log: Path,
        fields: dict[str, Any],
    ) -> None:
        self.harness = harness
        self.session = session
        self.env = env
        self.log = log
        self.fields = fields  # attempt, agent, turn (and stage): what every line of this turn names
        self.id: str | None = None
        self.file: Path | None = None
        self.looked: float = 0.0  # when the file of a named session was last looked for

    @property
    def known(self) -> bool:
        """Whether the agent's session file is recorded: what it used can be read from it."""
        return self.file is not None or (self.id is not None and self._file() is not None)

    def start(self, harness_name: str) -> None:
        if self.harness is not None:
            try:
                self.harness.name_session(self.session)
            except Exception:  # a harness's bug costs the record of its session, never the turn
                pass
        self.id, self.file = self.session.id, self._file()
        entries.append(
            self.log,
            entries.turn_start(
                **self.fields,
                harness=harness_name,
                session=self.id,
                session_file=str(self.file) if self.file else None,
                session_offset=size_of(self.file),
            ),
        )

    def check(self) -> None:
        """While the turn runs: record the session once a new one is named, or its file once found."""
        if self.session.id == self.id and (self.file is not None or self.id is None):
            return
        new = self.session.id != self.id
        if not new and time.monotonic() - self.looked < LOOK_AGAIN:
            return  # a search of the program's folder of sessions, once a second at most
        self.looked = time.monotonic()
        file = self._file()
        if not new and file is None:
            return
        self.id, self.file = self.session.id, file
        entries.append(
            self.log,
            entries.session(
                **self.fields,
                session=self.id,
                session_file=str(file) if file else None,
                # A session named in this turn is this turn's from its first byte.
                session_offset=0,
            ),
        )

    def _file(self) -> Path | None:
        if self.harness is None:
            return None
        try:
            return self.harness.session_file(self.session, self.env)
        except Exception:  # a harness's bug costs the record of its session, never the turn
            return None
