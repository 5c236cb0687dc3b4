"""The pytest plugin of awf.testing: a test's run folders are removed once it has passed.

A test that failed keeps them, and the session's summary says where, so its record can be read
with `jq` and `awf runs --run-root`. `AWF_KEEP_TEST_RUNS=1` keeps every test's folders.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from . import scratch

_FAILED = pytest.StashKey[bool]()
_KEPT = pytest.StashKey[list[Path]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        item.stash[_FAILED] = True
    if report.when != "teardown":
        return
    folders = scratch.take()
    if item.stash.get(_FAILED, False) or scratch.keep_asked():
        item.config.stash.setdefault(_KEPT, []).extend(folders)
    else:
        scratch.remove(folders)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    kept = config.stash.get(_KEPT, [])
    if kept:
        terminalreporter.write_sep("-", "awf.testing")
        terminalreporter.write_line(scratch.kept_text(kept))
