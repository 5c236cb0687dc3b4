"""`awf run --plan`: what an attempt would reuse, where it would start, and where it would stop or park."""

from __future__ import annotations

from typing import Any

from ..engine.durations import format_duration
from ..engine.errors import Park
from ..engine.lookahead import LookAhead, Seen
from ..engine.schema_text import type_text
from ..engine.start_point import Preview
from ..record.clock import age
from .one_line import skipped_text
from .runs_table import waits_text


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
                "attempt": seen.record["attempt"] if seen.record else None,
                "ended": seen.record.get("ended") if seen.record else None,
                **({"schema": seen.json_schema} if seen.how == "needs" and seen.schema else {}),
            }
            for seen in look.seen
        ],
        "start": {"stage": look.start[0], "why": look.start[1]} if look.start else None,
        "stop": None,
        "park": look.park,
        "go_on": preview.go_on or None,
        "to_stage": preview.to_stage,
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
    if look.beyond_start:
        data["after_start"] = [
            {
                "stage": seen.name,
                "how": seen.how,
                "why": seen.why,
                "attempt": seen.record["attempt"] if seen.record else None,
            }
            for seen in look.beyond
        ]
        data["waits"] = [
            {"wait": w.wait, "after": w.after, "names": w.names, "how": w.how, "event": w.event, "due": w.due}
            for w in look.waits
        ]
        if look.park is not None and not preview.would_stop:
            data["would"] = "park"
    if look.value_problems:
        data["value_problems"] = look.value_problems
    if look.ended:
        data["unseen"] = look.ended
    return data


def preview_text(preview: Preview) -> str:
    """The preview as a person reads it: each stage, and in a run with events each wait, in order."""
    look = preview.look
    lines = [f"{preview.name}: what attempt {preview.attempt} would do (nothing has run)"]
    entered = [*look.seen, *look.beyond]
    names = [seen.name for seen in entered] + [look.start[0] if look.start else "", look.halt[0] if look.halt else ""]
    width = max([len(name) for name in names] + [4])
    lines += _waits_after(look, None)
    for seen in look.seen:
        lines.append(_stage_line(seen, width))
        lines += _waits_after(look, seen.name)
    if look.start:
        stage, why = look.start
        after = "it runs" if look.beyond_start else "it and every stage after it run"
        lines.append(f"  ▸ {stage:<{width}}  start point ({why}); {after}")
        lines += _waits_after(look, stage)
        for seen in look.beyond:
            lines.append(_stage_line(seen, width))
            lines += _waits_after(look, seen.name)
    if look.halt:
        stage, halt = look.halt
        lines.append(f"  ■ {stage:<{width}}  stop: {halt.reason}")
    for problem in look.value_problems:
        lines.append(f"  ■ --values: {problem}")
    if look.stop:
        lines.append(f"  ■ a stop between stages: {look.stop}")
    if look.returned:
        lines += _returned_lines(preview)
    if look.completes:
        lines.append("  ✓ the workflow returns")
    if look.ended:
        lines.append(f"  … the look-ahead stops here: {look.ended}")
    if preview.to_stage and not preview.would_stop:
        lines.append(f"  ■ the attempt ends stopped (exit 3) once {preview.to_stage} has succeeded (--to-stage)")
    lines.append(_would(preview))
    if preview.go_on:
        lines.append(f"go on: {preview.go_on}")
    lines += [f"note: {hint}" for hint in (preview.preset.hints if preview.preset else [])]
    return "\n".join(lines)


def _returned_lines(preview: Preview) -> list[str]:
    """What the preview says of a workflow that would return before it ran a stage."""
    if not preview.from_stage:
        return ["  ✓ the workflow returns: every stage it enters would be reused"]
    lines = [f"  ■ the workflow returns without reaching --from-stage {preview.from_stage}"]
    if preview.preset and preview.preset.reason:
        lines.append(f"    {preview.preset.reason}")
    return lines


def _would(preview: Preview) -> str:
    """What the attempt would come to: stop, park or run."""
    if preview.would_stop:
        return "would stop (exit 3)"
    if preview.look.park is not None:
        return f"would park (exit 0), {Park(preview.look.park).text}"
    return "would run"


def _stage_line(seen: Seen, width: int) -> str:
    if seen.how == "reused":
        seconds = age(seen.record.get("ended")) if seen.record else None
        ago = f", {format_duration(seconds)} ago" if seconds is not None else ""
        attempt = seen.record["attempt"] if seen.record else None
        return f"  ↺ {seen.name:<{width}}  reuse: succeeded in attempt {attempt}{ago}"
    if seen.how == "provided":
        return f"  ↺ {seen.name:<{width}}  the value given with --values"
    if seen.how == "fresh":
        return f"  ⟳ {seen.name:<{width}}  runs (fresh=True); if its value changes, the stages after it run again"
    if seen.how == "skipped":
        return f"  ↷ {seen.name:<{width}}  {skipped_text(seen.record)}"
    if seen.how == "needs":
        return f"  ? {seen.name:<{width}}  needs a value: {type_text(seen.json_schema)}"
    return f"  ▸ {seen.name:<{width}}  runs ({seen.why})" if seen.why else f"  ▸ {seen.name:<{width}}  runs"


def _waits_after(look: LookAhead, stage: str | None) -> list[str]:
    """The waits for events the attempt would reach after `stage`, and how each would be answered."""
    lines = []
    for wait in look.waits:
        if wait.after != stage:
            continue
        where = f"after {stage}" if stage else "before any stage"
        what = (
            waits_text([{"wait": wait.wait, "names": wait.names, "due": wait.due}])
            if wait.names or wait.due
            else "its time"
        )
        if wait.how == "replayed":
            said = f"takes {wait.event} again, as an earlier attempt did" if wait.event else "keeps its recorded answer"
        elif wait.how == "queued":
            said = f"{wait.event} is in the inbox: it takes it"
        elif wait.how == "due":
            said = "its time has come"
        else:
            said = "nothing for it in the inbox: the attempt parks here"
        mark = "◆" if wait.how == "parks" else "⧖"
        lines.append(f"  {mark} waits for {what} {where} ({wait.wait}): {said}")
    return lines
