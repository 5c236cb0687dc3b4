"""The summaries `awf runs` made of runs that have ended, kept so the next listing need not read
their logs again.

A run whose last attempt has ended (completed, parked, stopped, failed, timed out, cancelled)
has a summary that is a function of its files alone: its run.jsonl, and for a run with events its
inbox. It is kept in `{run root}/.cache/summaries.json` under the identity of those files (size,
modification and change times, inode), which every append and every hand edit changes, so a
kept summary is used only while the files are byte for byte the ones it was made from. A running
or interrupted run is read every time: whether its process is alive is not in its files.

It is derived data: a cache that is missing, damaged, of another format or cannot be written is
read past and made again, never an error, and nothing of the record depends on it.
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path

from .errors import RecordError
from .files import write_atomic
from .layout import RunPaths
from .summary import RunSummary, summarize

CACHE_FORMAT = 1  # the shape of the file and of the summaries in it: another is read as none
ENDED = frozenset(("completed", "parked", "stopped", "failed", "timed-out", "cancelled"))
_FIELDS = tuple(field.name for field in fields(RunSummary) if field.name not in ("dir", "place"))

_Identity = list[int]


def _identity(path: str) -> _Identity | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]


class SummaryCache:
    """The kept summaries of one run root: `summary(paths)` gives a run's summary, kept or read."""

    def __init__(self, root: Path) -> None:
        self.path: Path = root / ".cache" / "summaries.json"
        self._kept: dict[str, object] = self._load()
        self._seen: set[str] = set()
        self._changed = False

    def _load(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or not isinstance(data.get("runs"), dict):
            return {}
        runs: dict[str, object] = data["runs"]
        return runs

    def summary(self, paths: RunPaths) -> RunSummary | None:
        """The run's summary: the kept one while its files are unchanged, else read off them
        (raising RecordError as `summarize` does)."""
        folder = os.path.join(str(paths.root), paths.workflow, paths.id)
        name = f"{paths.workflow}/{paths.id}"
        self._seen.add(name)
        log = _identity(os.path.join(folder, "run.jsonl"))
        kept = self._kept.get(name)
        if log is not None and isinstance(kept, dict) and kept.get("log") == log:
            inbox = _identity(os.path.join(folder, "events.jsonl")) if kept.get("events") else None
            if inbox == kept.get("inbox"):
                made = _summary_of(kept.get("summary"), Path(folder))
                if made is not None:
                    return made
        summary = summarize(paths)
        if summary is not None and summary.status in ENDED and log is not None:
            events = summary.queued is not None  # a run with events counts its inbox
            self._kept[name] = {
                "log": log,
                "events": events,
                "inbox": _identity(os.path.join(folder, "events.jsonl")) if events else None,
                "summary": {key: getattr(summary, key) for key in _FIELDS},
            }
            self._changed = True
        elif name in self._kept:
            del self._kept[name]
            self._changed = True
        return summary

    def save(self, *, whole: bool) -> None:
        """Keep what changed; `whole`: every run of the root was looked at, so the summaries of
        runs that are gone are dropped."""
        if whole:
            gone = [name for name in self._kept if name not in self._seen]
            for name in gone:
                del self._kept[name]
            self._changed = self._changed or bool(gone)
        if not self._changed:
            return
        text = json.dumps({"format": CACHE_FORMAT, "runs": self._kept}, ensure_ascii=False, separators=(",", ":"))
        try:
            self.path.parent.mkdir(exist_ok=True)
            write_atomic(self.path, text)
        except (OSError, RecordError):
            pass  # a root this user cannot write to, or a full disk: the next listing reads the logs
        self._changed = False


def _summary_of(kept: object, folder: Path) -> RunSummary | None:
    """A kept summary made whole again, or None when it is not what this code keeps."""
    if not isinstance(kept, dict) or set(kept) != set(_FIELDS):
        return None
    try:
        return RunSummary(dir=folder, **kept)
    except TypeError:
        return None
