"""Fuzzed records: a real run's files damaged, and every command that reads or goes on run on them.

Three runs are made once by the real CLI: one that completed, one that stopped, one that parked.
Each example puts them back, damages one file of one run (a truncation at any byte, a byte
flipped, a line of run.jsonl duplicated, swapped or deleted, a value of the wrong type, a
`version` from the future, an empty file, a folder where a file was, a file gone), then runs
`awf runs`, `awf runs W/ID`, `awf logs W/ID`, `awf run … --continue --plan`, `awf send W/ID ci
--no-wake` and `awf run … --continue` in subprocesses. Each exits with a code its command documents and never
with a traceback; a file that cannot be read is named in an `awf:` line; and a command that reads,
or refuses, changes no file of the run root.

Examples are drawn from a fixed seed with no database, so CI tries the same ones every time;
AWF_FUZZ_EXAMPLES=N tries N an argument instead, and AWF_FUZZ_RANDOM=1 draws them at random.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, Result
from faults_support import awf, no_traceback
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from workflows import COUNTED, PARKED

pytestmark = pytest.mark.faults

EXAMPLES = int(os.environ.get("AWF_FUZZ_EXAMPLES", "7"))
RANDOM = os.environ.get("AWF_FUZZ_RANDOM") == "1"


@dataclass(frozen=True)
class Made:
    """A run made by the real CLI: its file, workflow and id."""

    file: str
    workflow: str
    id: str

    @property
    def name(self) -> str:
        return f"{self.workflow}/{self.id}"


RUNS = {
    "completed": Made("counted.py", "counted", "done"),
    "stopped": Made("counted.py", "counted", "stopped"),
    "parked": Made("parked.py", "parked", "p"),
}

# What each command may exit with (docs/cli.md): the readers 0 read, 1 no such run, 3 unreadable;
# `--plan` 0 would run, 2 refused, 3 would stop or unreadable; a continue any ending but a cancel.
READERS = {0, 1, 3}
PLAN = {0, 2, 3}
CONTINUE = {0, 1, 2, 3}
# `awf send`: 0 queued, 1 no such run, 2 refused (the run takes no such event now), 3 unreadable.
SEND = {0, 1, 2, 3}


@dataclass
class Runs:
    """The project the runs were made in (`work`, put back from `template` before each example)."""

    work: Path
    template: Path

    def restore(self) -> None:
        shutil.rmtree(self.work)
        shutil.copytree(self.template, self.work, symlinks=True)

    def run_dir(self, made: Made) -> Path:
        return self.work / ".awf" / "runs" / made.workflow / made.id

    def files(self, made: Made) -> list[str]:
        """The record files of a run that a person may read or edit, as paths inside its folder."""
        folder = self.template / ".awf" / "runs" / made.workflow / made.id
        names = ["run.jsonl", "out.json", "events.jsonl"]
        names += [f"stages/{file.name}" for file in sorted((folder / "stages").glob("*.json"))]
        return [name for name in names if (folder / name).is_file()]


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    work = tmp_path_factory.mktemp("fuzzed-runs")
    project = Project(work)
    project.write("counted.py", COUNTED)
    project.write("parked.py", PARKED)
    assert project.awf("run", "counted.py", "--id", "done").code == 0
    (work / "stop-b").touch()  # kept: the stopped run's continues stop in b again
    assert project.awf("run", "counted.py", "--id", "stopped").code == 3
    assert project.awf("run", "parked.py", "--id", "p").code == 0
    assert project.awf("send", "parked/p", "note", "--data", '"hi"', "--no-wake").code == 0
    template = work.parent / f"{work.name}-template"
    shutil.copytree(work, template, symlinks=True)
    return Runs(work, template)


def snapshot(root: Path) -> dict[str, tuple[str, bytes, int]]:
    """Every entry under `root`: its kind, and for a file its bytes and its mtime.

    The run root's `.cache` is left out: it keeps what `awf runs` read of ended runs, is not the
    record, and a reader may write it (docs/record.md).
    """
    seen: dict[str, tuple[str, bytes, int]] = {}
    for folder, dirs, files in os.walk(root):
        if folder == str(root):
            dirs[:] = [name for name in dirs if name != ".cache"]
        for name in dirs:
            seen[os.path.relpath(os.path.join(folder, name), root)] = ("folder", b"", 0)
        for name in files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            data = b"" if os.path.islink(path) else Path(path).read_bytes()
            seen[os.path.relpath(path, root)] = ("file", data, info.st_mtime_ns)
    return seen


def changed(before: dict[str, tuple[str, bytes, int]], after: dict[str, tuple[str, bytes, int]]) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


# Damage ---------------------------------------------------------------------------------------

WRONG = [None, True, 0, -1, 2**70, 1.5, "", "x", [], [1], {}, {"a": 1}]
FUTURE = [2, 3, 99, 0, -1]


def json_type(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def paths_in(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key and index inside a JSON value, at any depth."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*prefix, key)
            yield from paths_in(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield (*prefix, index)
            yield from paths_in(inner, (*prefix, index))


def put(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    inner = value
    for step in path[:-1]:
        inner = inner[step]
    inner[path[-1]] = new
    return value


@dataclass(frozen=True)
class Damage:
    """What was done to which file: how the failure reads, so it can be done again by hand."""

    file: str
    how: str


# Lock files: not read, but opened by every attempt; a folder in their place is as cheap to try.
LOCKS = ("attempt.lock", "events.lock")


def damage_bytes(data: st.DataObject, folder: Path, files: list[str]) -> Damage:
    """A truncation at any byte, a byte flipped, an empty file, a file deleted, a folder where a
    file goes (a lock file too), a file where the stages folder goes."""
    how = data.draw(st.sampled_from(["truncate", "flip", "empty", "delete", "folder", "stages a file"]), label="how")
    if how == "stages a file":
        shutil.rmtree(folder / "stages")
        (folder / "stages").write_text("")
        return Damage("stages", "replaced by an empty file")
    if how == "folder":
        files = files + [name for name in LOCKS if (folder / name).is_file()]
    file = data.draw(st.sampled_from(files), label="file")
    path = folder / file
    content = path.read_bytes()
    if how == "truncate":
        at = data.draw(st.integers(0, len(content) - 1), label="at")
        path.write_bytes(content[:at])
        return Damage(file, f"truncated at byte {at} of {len(content)}")
    if how == "flip":
        at = data.draw(st.integers(0, len(content) - 1), label="at")
        mask = data.draw(st.integers(1, 255), label="mask")
        flipped = bytearray(content)
        flipped[at] ^= mask
        path.write_bytes(bytes(flipped))
        return Damage(file, f"byte {at} xor {mask:#04x} ({content[at : at + 1]!r} to {bytes(flipped[at : at + 1])!r})")
    if how == "empty":
        path.write_bytes(b"")
        return Damage(file, "emptied")
    path.unlink()
    if how == "folder":
        path.mkdir()
        return Damage(file, "replaced by a folder")
    return Damage(file, "deleted")


def damage_lines(data: st.DataObject, folder: Path, files: list[str]) -> Damage:
    file = data.draw(st.sampled_from([name for name in files if name.endswith(".jsonl")]), label="file")
    path = folder / file
    lines = path.read_bytes().splitlines(keepends=True)
    how = data.draw(st.sampled_from(["duplicate", "swap", "delete"]), label="how")
    one = data.draw(st.integers(0, len(lines) - 1), label="line")
    if how == "duplicate":
        other = data.draw(st.integers(0, len(lines)), label="to")
        lines.insert(other, lines[one])
        said = f"line {one + 1} copied before line {other + 1}"
    elif how == "swap" and len(lines) > 1:
        other = data.draw(st.integers(0, len(lines) - 1).filter(lambda n: n != one), label="with")
        lines[one], lines[other] = lines[other], lines[one]
        said = f"lines {one + 1} and {other + 1} swapped"
    else:
        del lines[one]
        said = f"line {one + 1} deleted"
    path.write_bytes(b"".join(lines))
    return Damage(file, said)


def damage_values(data: st.DataObject, folder: Path, files: list[str]) -> Damage:
    """A value of the wrong type, or a `version` from the future, in valid JSON."""
    file = data.draw(st.sampled_from(files), label="file")
    path = folder / file
    text = path.read_text()
    if file.endswith(".jsonl"):
        lines = text.splitlines(keepends=True)
        index = data.draw(st.integers(0, len(lines) - 1), label="line")
        entry = json.loads(lines[index])
    else:
        entry = json.loads(text)
    if data.draw(st.booleans(), label="version"):
        path_in = ("version",)
        new = data.draw(st.sampled_from(FUTURE), label="to")
    else:
        path_in = data.draw(st.sampled_from(list(paths_in(entry))), label="at")
        old = entry
        for step in path_in:
            old = old[step]
        new = data.draw(st.sampled_from([value for value in WRONG if json_type(value) != json_type(old)]), label="to")
    put(entry, path_in, new)
    if file.endswith(".jsonl"):
        lines[index] = json.dumps(entry, ensure_ascii=False) + "\n"
        path.write_text("".join(lines))
        where = f"line {index + 1}"
    else:
        path.write_text(json.dumps(entry, ensure_ascii=False, indent=2))
        where = "the file"
    return Damage(file, f"{where}: {'.'.join(map(str, path_in))} set to {json.dumps(new)}")


DAMAGES = {"bytes": damage_bytes, "lines": damage_lines, "values": damage_values}


# The commands ---------------------------------------------------------------------------------


def says_unreadable(stderr: str) -> bool:
    return any(words in stderr for words in ("cannot be read", "does not fit", "cannot be used", "format version"))


@pytest.fixture
def tally(request: pytest.FixtureRequest) -> Iterator[Counter[str]]:
    """How the damaged runs read; written where the session's figures are gathered."""
    counts: Counter[str] = Counter()
    yield counts
    folder = request.config.cache.mkdir("awf-faults")
    key = request.node.name.replace("[", "-").replace("]", "")
    (folder / f"fuzz-{key}.json").write_text(json.dumps({"kind": "fuzzed records", **counts}))


@pytest.mark.parametrize("family", sorted(DAMAGES))
@pytest.mark.parametrize("run", sorted(RUNS))
@settings(
    max_examples=EXAMPLES,
    derandomize=not RANDOM,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_damaged_record_is_read_or_refused_with_a_documented_code_naming_the_file(
    runs: Runs, tally: Counter[str], run: str, family: str, data: st.DataObject
):
    made = RUNS[run]
    runs.restore()
    folder = runs.run_dir(made)
    damage = DAMAGES[family](data, folder, runs.files(made))
    damaged = folder / damage.file
    where = f"{made.name}: {damage.file} {damage.how}"
    root = runs.work / ".awf" / "runs"
    before = snapshot(root)
    env = Project(runs.work).env
    go_on = ["run", made.file, "--id", made.id, "--continue"]

    def check(argv: list[str], codes: set[int]) -> Result:
        nonlocal before
        result = awf(argv, runs.work, env)
        said = f"{where}: awf {' '.join(argv)} exited {result.code}\n{result.stderr}"
        assert no_traceback(result) and result.code in codes, said
        refused = result.code == 2 or "record cannot be read" in result.stderr
        if refused or (argv[0] != "run" and result.code != 0):
            assert any(line.startswith("awf: ") for line in result.stderr.splitlines()), said
        # A file that cannot be read is named: in an `awf:` line when it refuses the command, in
        # the closing block when it stops an attempt at the stage whose record it is.
        if says_unreadable(result.stderr) or (argv[0] != "run" and result.code == 3):
            assert str(damaged) in result.stderr, said
        if (argv[0] not in ("run", "send") or "--plan" in argv or refused) or (argv[0] == "send" and result.code):
            assert not changed(before, snapshot(root)), f"{said}\nchanged: {changed(before, snapshot(root))}"
        if argv[0] == "send" and result.code == 0:
            before = snapshot(root)  # the event it queued is the run's from here on
        return result

    check(["runs"], READERS)
    read_as = {0: "read", 1: "no such run", 3: "unreadable"}[check(["runs", made.name], READERS).code]
    check(["logs", made.name], READERS)
    check([*go_on, "--plan"], PLAN)
    check(["send", made.name, "ci", "--data", '{"pr": 1}', "--event-id", "fuzz-1", "--no-wake"], SEND)
    check(go_on, CONTINUE)
    others = {name: entry for name, entry in before.items() if not name.startswith(f"{made.workflow}/{made.id}/")}
    after = snapshot(root)
    assert not changed(others, {name: after[name] for name in others if name in after}), f"{where}: other runs changed"
    tally[read_as] += 1
