"""A run whose run.jsonl is large: made by the real awf, then grown with lines of its own format.

`awf run` makes the run (stage `a` recorded, stage `b` stopped, waiting for a file), and its first
attempt is then given `lines` more stage and turn lines between its start and its end, written by
the record's own constructors. What the readers see is exactly the record's format, as a run of
many stages and turns would leave it, without running them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from awf.record import entries
from awf.record.files import dumps

WORKFLOW = "big"
RUN_ID = "r1"
# About 1 kB a line, as a stage of real work records.
PADDING = 1100

SOURCE = f"""
from pathlib import Path

import awf


@awf.workflow(name="{WORKFLOW}", description="One stage, then one that waits for a file.", version="1.0.0")
async def big(wf):
    async def a():
        return "a"

    await wf.stage("a", a, result={{"type": "string"}})

    async def b():
        if not (Path(__file__).parent / "GO").exists():  # beside the file: a copy of the run goes on from its own
            wf.stop("waiting for GO")
        return "done"

    await wf.stage("b", b, result={{"type": "string"}})
"""


@dataclass(frozen=True)
class BigRun:
    project: Path  # the folder the run works in; its runs are under .awf/runs
    workflow_file: Path
    log: Path

    @property
    def name(self) -> str:
        return f"{WORKFLOW}/{RUN_ID}"

    def last_cursor(self) -> int:
        """The byte offset the log's last line starts at: `awf logs --after` it prints nothing."""
        with open(self.log, "rb") as handle:
            data = handle.seek(0, 2)
            handle.seek(max(0, data - 65536))
            tail = handle.read()
        return data - len(tail) + tail.rstrip(b"\n").rfind(b"\n") + 1


def make_big_run(project: Path, awf: Sequence[str], lines: int, padding: int = PADDING) -> BigRun:
    """A stopped run in `project` whose first attempt holds `lines` more stage and turn lines, each
    with a text of `padding` characters (a prompt, a stage's value)."""
    project.mkdir(parents=True, exist_ok=True)
    workflow_file = project / "big.py"
    workflow_file.write_text(SOURCE)
    done = subprocess.run(
        [*awf, "run", str(workflow_file), "--id", RUN_ID], cwd=project, capture_output=True, text=True, check=False
    )
    if done.returncode != 3:
        raise RuntimeError(f"awf run exited {done.returncode}, not 3 (stopped):\n{done.stderr}")
    log = project / ".awf" / "runs" / WORKFLOW / RUN_ID / "run.jsonl"
    written = log.read_bytes().splitlines(keepends=True)  # a few lines: the real run's
    parsed = [json.loads(line) for line in written]
    record = next(entry["record"] for entry in parsed if entry["kind"] == "stage" and entry["stage"] == "a")
    end = next(index for index, entry in enumerate(parsed) if entry["kind"] == "attempt-end")
    with open(log, "wb") as handle:
        handle.writelines(written[:end])
        handle.writelines(_grown(record, lines, "x" * padding))
        handle.writelines(written[end:])
    return BigRun(project, workflow_file, log)


def _grown(record: dict[str, Any], count: int, text: str) -> Iterator[bytes]:
    """`count` lines of attempt 1: a stage started, its turn, the stage recorded; again and again."""
    for index in range(count):
        stage = f"s{index // 3:06d}"
        step = index % 3
        line: entries.Entry
        if step == 0:
            line = entries.stage_start(attempt=1, stage=stage)
        elif step == 1:
            line = entries.turn(
                attempt=1,
                agent="worker",
                turn=index // 3 + 1,
                outcome="answered",
                stage=stage,
                prompt=text,
                value="ok",
                usage={"input": 1000, "output": 100},
                cost=0.001,
            )
        else:
            line = entries.stage(attempt=1, stage=stage, record=cast(Any, {**record, "stage": stage, "value": text}))
        yield (dumps(line) + "\n").encode()
