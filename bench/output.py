"""An agent's large output: `awf run` of an exec agent that prints a big file before its answer,
beside a plain `cat` of the same file into a file.

The agent's standard output goes to a file in its turn's folder, as `cat`'s does here; awf then
keeps that file to its runtime's "max_output" (the middle dropped, and the drop said) and reads
only that much to find the answer. What it costs beyond `cat` is the price of a big output.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from .harness import Figure, Series, combine, filled, rounds, run_timed
from .session import Session

FAMILY = "output"

PRINTER_FILE = textwrap.dedent("""
    import awf

    PRINTED = {"type": "object", "required": ["printed"]}


    @awf.workflow(name="bench-output", description="An agent that prints a file, then answers.",
                  prepare=lambda argv: {"path": argv[0]})
    async def printer(wf: awf.Context, path: str):
        async def work():
            command = ["sh", "-c", 'cat "$0" && echo \\'{"printed": true}\\'', path]
            agent = await wf.agents.open(key="printer", runtime={"harness": "exec", "command": command})
            turn = await agent.run(prompt="Print the file, then answer.", schema=PRINTED)
            if not turn.outcome.answered:
                raise RuntimeError(f"the printer did not answer: {turn.outcome}")
            return turn.outcome.value

        return await wf.stage("print", work, result=PRINTED)
""").lstrip()


def big_file(folder: Path, size: int) -> Path:
    """About `size` bytes of whole text lines, as a test suite or a build prints them."""
    line = b"tests/test_output.py::test_a_line_of_a_long_log PASSED                       [ 42%]\n"
    lines = max(size // len(line), 1)
    per_block = 2**20 // len(line)
    path = folder / "printed.txt"
    with open(path, "wb") as handle:
        for _ in range(lines // per_block):
            handle.write(line * per_block)
        handle.write(line * (lines % per_block))
    return path


def output_runs(session: Session) -> dict[str, Series]:
    """The Timed of `awf run` and of `cat`, round by round; taken once a session."""

    def take() -> dict[str, Series]:
        folder = session.scratch("output")
        printed = big_file(folder, session.config.output_bytes)
        workflow = folder / "printer.py"
        workflow.write_text(PRINTER_FILE)
        runs: list[Path] = []

        def awf() -> object:
            runs.append(session.scratch("output-run"))
            command = [*session.awf, "run", str(workflow), "--id", "r", "--run-root", str(runs[-1]), "--", str(printed)]
            timed = run_timed(command, cwd=session.project, env=session.env)
            session.discard(runs[-1])
            return timed

        def cat() -> object:
            timed = run_timed(["sh", "-c", 'cat "$0" > "$1"', str(printed), str(folder / "copy.txt")], cwd=folder)
            (folder / "copy.txt").unlink()
            return timed

        results = rounds(session.config.repeats, {"awf": awf, "cat": cat})
        session.discard(folder)
        return results

    return session.once("output", take)


def figures(session: Session) -> list[Figure]:
    size = session.config.output_bytes
    amount = f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size / 2**20:g} MiB"
    samples = output_runs(session)
    rows = [
        (Figure("output.cat", FAMILY, f"cat of {amount} into a file", short="cat"), "seconds", "cat"),
        (
            Figure("output.awf", FAMILY, f"awf run: an agent prints {amount}, then answers", baseline="output.cat"),
            "seconds",
            "awf",
        ),
        (
            Figure("output.cat.memory", FAMILY, f"cat of {amount}; peak memory", unit="bytes", short="cat"),
            "peak_rss",
            "cat",
        ),
        (
            Figure(
                "output.awf.memory",
                FAMILY,
                f"awf run: an agent prints {amount}; peak memory",
                unit="bytes",
                baseline="output.cat.memory",
            ),
            "peak_rss",
            "awf",
        ),
    ]
    return [
        filled(figure, combine(lambda timed, what=what: getattr(timed, what), samples[name]))
        for figure, what, name in rows
    ]
