"""The `exec` runtime: any command as an agent.

    runtime={"harness": "exec", "command": ["python3", "agents/reviewer.py"]}

Each delivery runs the command once, in the agent's cwd, with the message on stdin and the
environment `awf answer` needs. The command answers by running `awf answer`, or by printing one
JSON document as the last thing on stdout (without a schema: its stdout is the answer). A
non-zero exit fails the turn, with the exit code and the end of stderr as the reason. A command
has no session: a second turn runs it again, and the recovery prompt runs it again with the
recovery text followed by the turn's prompt. AWF_AGENT_DIR is the same folder on every turn,
for a command that keeps notes between them. What it prints is kept on disk up to "max_output"
bytes a stream (awf.agents.output), and only that is ever read.

In a pane ("placement": "pane"), the command is started once, in a terminal, and each message
is pasted into its standard input, then Enter and Ctrl-D: a `sys.stdin.read()` returns one
whole message, and the next read waits for the next one (the recovery prompt, the next turn).
It answers with `awf answer`; what it prints is on its screen, not taken as an answer.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from ...record.files import read_bytes, write_atomic
from ..harness import Capabilities, Harness, Message, PaneProgram, Session, Stopped
from ..output import DEFAULT_CAP, cap_output, read_end

STDERR_TAIL = 2000


def command_of(runtime: dict[str, Any]) -> list[str]:
    command = runtime.get("command")
    return shlex.split(command) if isinstance(command, str) else list(command or [])


class ExecHarness(Harness):
    name = "exec"
    capabilities: ClassVar[Capabilities] = Capabilities(
        sessions=False,
        answer_in_output=True,
        tokens=False,
        cost=None,
        session_file=False,
        pane=True,
        pane_finish=False,
        sandbox_login=False,
    )
    answer_hint: ClassVar[str | None] = "You may instead print the answer as the last thing on your standard output."

    def spec_problem(self, runtime: dict[str, Any]) -> str | None:
        command = runtime.get("command")
        good = (isinstance(command, str) and shlex.split(command)) or (
            isinstance(command, list) and command and all(isinstance(word, str) for word in command)
        )
        if not good:
            return 'the exec runtime runs a command: give it "command": ["program", "arg", ...]'
        cap = runtime.get("max_output", DEFAULT_CAP)
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1024:
            return f'"max_output" is the bytes of each output stream kept on disk, at least 1024, not {cap!r}'
        return None

    def missing(self, session: Session, env: Mapping[str, str]) -> str | None:
        program = command_of(session.runtime)[0]
        if os.sep in program:
            path = session.cwd / program
            if not path.is_file():
                return f"the command {program} does not exist (looked in {session.cwd}); give its path"
            if not os.access(path, os.X_OK):
                return f"the command {path} is not executable: chmod +x it, or run it with its interpreter"
            return None
        if shutil.which(program, path=env.get("PATH")) is None:
            return f"the command {program} is not installed: it is not on PATH; install it, or give its full path"
        return None

    def pane_command(self, session: Session, env: Mapping[str, str]) -> PaneProgram:
        # Ctrl-D after the message's last line ends a read of the terminal, as the end of a file would.
        return PaneProgram(command_of(session.runtime), submit=("Enter", "C-d"), settle=0)

    async def deliver(self, session: Session, message: Message) -> Stopped:
        n = message.delivery
        prompt = message.dir / f"{n}.prompt.txt"
        stdout, stderr = message.dir / f"{n}.stdout.txt", message.dir / f"{n}.stderr.txt"
        text = message.text
        if message.recovery:
            text += "\n\nThe turn's prompt was:\n\n" + message.original
        if session.instructions:
            text = session.instructions.rstrip() + "\n\n" + text
        write_atomic(prompt, text)
        env = dict(message.env)
        env["AWF_DELIVERY"] = str(n)
        if message.recovery:
            env["AWF_RECOVERY"] = "1"
        command = command_of(session.runtime)
        process = session.spawn(command, env=env, stdin=prompt, stdout=stdout, stderr=stderr, turn=message.turn)
        try:
            code = await process.wait()
        finally:
            process.end()  # what it left in its group goes with it; when cancelled, it goes now
            for output in (stdout, stderr):
                cap_output(output, session.runtime.get("max_output", DEFAULT_CAP))
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            return Stopped(failed=f"{shlex.join(command)} {how}{_tail(stderr)}")
        return Stopped(text=_read(stdout))


def _read(path: Path) -> str:
    try:
        return read_bytes(path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _tail(path: Path) -> str:
    text = read_end(path, STDERR_TAIL).strip()
    if not text:
        return " and printed nothing on stderr"
    return f"; the end of its stderr:\n{text}"


HARNESS = ExecHarness
