"""The run's cost as an attempt goes: read off the log once, then only what was appended since.

`--max-cost` asks before every turn, and the ending (out.json, the closing block) once more. Each
ask reads on from where the last one stopped, through the file the attempt's history read the log
with (or one it opens the first time, for a new run): a run of many turns is read once, never once
a turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ..record.costs import TurnCost, TurnCosts
from ..record.errors import RecordError
from ..record.folder import History
from ..record.log import lines_of, open_log
from ..record.summary import cost_entries

# The lines a run's cost is read from.
COST_KINDS = frozenset({"turn", "usage"})


class CostTally:
    def __init__(self, log: Path, history: History | None) -> None:
        self._log = log
        self._handle: BinaryIO | None = history.handle if history is not None else None
        self._own = False
        self._read_to = 0
        self._costs = TurnCosts()
        # What the history read is indexed by kind: of that, only its cost lines are read again.
        self._history = history if history is not None and history.log == log else None

    def turns(self) -> list[TurnCost]:
        """Each turn's cost so far, in the order the turns were recorded. A log that cannot be
        read adds nothing (its readers say why elsewhere)."""
        try:
            if self._handle is None or self._handle.closed:
                self._handle, self._own, self._history = open_log(self._log), True, None
            if self._history is not None:
                history, self._history = self._history, None
                self._read_to = history.read_to
                for line in history.lines(COST_KINDS):
                    self._costs.add(line.entry)
            for entry in cost_entries(str(self._log), self._new_lines(self._handle)):
                self._costs.add(entry)
        except (OSError, RecordError):
            pass
        return self._costs.turns

    def _new_lines(self, handle: BinaryIO) -> Iterator[tuple[int, bytes]]:
        for offset, raw in lines_of(handle, self._log, start=self._read_to):
            self._read_to = offset + len(raw)
            yield offset, raw

    def close(self) -> None:
        if self._own and self._handle is not None:
            self._handle.close()
        self._handle = None
