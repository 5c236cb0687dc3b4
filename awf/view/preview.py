"""`awf run --plan`: what an attempt would reuse, where it would start, and where it would stop."""

from __future__ import annotations

from typing import Any

from ..engine.attempt import Preview
from ..engine.durations import format_duration
from ..engine.schema_text import type_text
from ..record.clock import age


def preview_data(preview: Preview) -> dict[str, Any]:
    """The preview as data (`--plan --json`)."""
    look = preview.look
    data: dict[str, Any] = {
        "run": preview.name,
        "attempt": preview.attempt,
        "would": "stop" if preview.would_stop else "run",
        "stages": [
            {
                "stage": seen.name,
                "how": seen.how,
                "attempt": (seen.record or {}).get("attempt"),
                "ended": (seen.record or {}).get("ended"),
                **({"schema": seen.json_schema} if seen.how == "needs" and seen.schema else {}),
            }
            for seen in look.seen
        ],
        "start": {"stage": look.start[0], "why": look.start[1]} if look.start else None,
        "stop": None,
        "go_on": preview.go_on or None,
    }
    if look.halt:
        stage, halt = look.halt
        data["stop"] = {"stage": stage, "reason": halt.reason, "redo": halt.redo}
    elif look.stop:
        data["stop"] = {"stage": None, "reason": look.stop, "redo": None}
    elif look.needs:
        data["stop"] = {"stage": preview.from_stage, "reason": "values are needed", "redo": preview.from_stage}
    elif look.returned and preview.from_stage:
        reason = preview.preset.reason if preview.preset else f"--from-stage {preview.from_stage} is never reached"
        data["stop"] = {"stage": None, "reason": reason, "redo": None}
    if look.value_problems:
        data["value_problems"] = look.value_problems
    if look.ended:
        data["unseen"] = look.ended
    return data


def preview_text(preview: Preview) -> str:
    """The preview as a person reads it."""
    look = preview.look
    lines = [f"{preview.name}: what attempt {preview.attempt} would do (nothing has run)"]
    width = max([len(seen.name) for seen in look.seen] + [len(look.start[0]) if look.start else 0, 4])
    for seen in look.seen:
        if seen.how == "reused":
            record = seen.record or {}
            seconds = age(record.get("ended"))
            ago = f", {format_duration(seconds)} ago" if seconds is not None else ""
            lines.append(f"  ↺ {seen.name:<{width}}  reuse: succeeded in attempt {record.get('attempt')}{ago}")
        elif seen.how == "provided":
            lines.append(f"  ↺ {seen.name:<{width}}  the value given with --values")
        elif seen.how == "needs":
            lines.append(f"  ? {seen.name:<{width}}  needs a value: {type_text(seen.json_schema)}")
    if look.halt:
        stage, halt = look.halt
        lines.append(f"  ■ {stage:<{width}}  stop: {halt.reason}")
    elif look.start:
        stage, why = look.start
        lines.append(f"  ▸ {stage:<{width}}  start point ({why}); it and every stage after it run")
    for problem in look.value_problems:
        lines.append(f"  ■ --values: {problem}")
    if look.stop:
        lines.append(f"  ■ a stop between stages: {look.stop}")
    if look.returned:
        if preview.from_stage:
            lines.append(f"  ■ the workflow returns without reaching --from-stage {preview.from_stage}")
            if preview.preset and preview.preset.reason:
                lines.append(f"    {preview.preset.reason}")
        else:
            lines.append("  ✓ the workflow returns: every stage it enters would be reused")
    if look.ended:
        lines.append(f"  … the look-ahead stops here: {look.ended}")
    lines.append(f"would {'stop (exit 3)' if preview.would_stop else 'run'}")
    if preview.go_on:
        lines.append(f"go on: {preview.go_on}")
    lines += [f"note: {hint}" for hint in (preview.preset.hints if preview.preset else [])]
    return "\n".join(lines)
