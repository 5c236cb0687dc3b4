"""What awf adds to a prompt: how to answer, and the recovery prompt for an agent gone silent."""

from __future__ import annotations

import json

from ..record.schemas import JsonSchema


def answer_instructions(schema: JsonSchema | None, hint: str | None = None) -> str:
    """The end of every prompt: how to answer, and the JSON Schema the answer must fit."""
    lines = ["", "---", "When you are done, give your answer to awf by running `awf answer` in your shell."]
    if schema is None:
        lines += [
            "Your answer is text: pass it as one argument, or on stdin:",
            "",
            "    awf answer <<'ANSWER'",
            "    your answer",
            "    ANSWER",
        ]
    else:
        lines += [
            "Your answer is JSON, as one argument or on stdin:",
            "",
            "    awf answer <<'JSON'",
            "    {...}",
            "    JSON",
            "",
            "It must fit this JSON Schema:",
            "",
            *("    " + line for line in json.dumps(schema, indent=2, ensure_ascii=False).splitlines()),
        ]
    lines += [
        "",
        "awf answer checks the answer before it takes it: if it prints problems, fix them and run it again. "
        "It exits 0 once the answer is taken, and takes one answer. If you cannot do the work, run "
        '`awf answer --blocked "why"` instead.',
    ]
    if hint:
        lines.append(hint)
    return "\n".join(lines) + "\n"


def recovery_prompt(why: str, instructions: str) -> str:
    """The one recovery prompt an agent gets when it stops without answering."""
    return (
        f"You stopped without giving awf your answer ({why}). Your work so far stands: do not start over. "
        "Give your answer now." + instructions
    )
