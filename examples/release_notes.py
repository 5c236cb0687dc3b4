"""A workflow that needs no agent: draft release notes, wait for a person's approval, publish.

The approval is a file a person creates. The first attempt stops at it; after you approve,
a continue reuses the draft it already wrote and goes on from the approval.
"""

from pathlib import Path

import awf

DRAFT = {
    "type": "object",
    "required": ["path", "lines"],
    "additionalProperties": False,
    "properties": {"path": {"type": "string"}, "lines": {"type": "integer", "minimum": 0}},
}
PUBLISHED = {
    "type": "object",
    "required": ["path", "approved_by"],
    "properties": {"path": {"type": "string"}, "approved_by": {"type": "string"}},
}


@awf.workflow(
    name="release-notes",
    description="Draft release notes, wait for approval, publish them.",
    version="1.0.0",
    prepare=lambda argv: {"release": argv[0] if argv else "v1.0"},
    id=lambda args: args["release"],
    present=lambda value: f"published {value['path']} (approved by {value['approved_by']})",
)
async def release_notes(wf: awf.Context, release: str):
    async def draft():
        notes = Path(f"NOTES-{release}.md")
        changes = ["Runs keep every stage that succeeded.", "A continue picks up where a run stopped."]
        notes.write_text(f"# {release}\n\n" + "".join(f"- {line}\n" for line in changes))
        return {"path": str(notes), "lines": len(changes)}

    notes = await wf.stage("draft", draft, result=DRAFT, summary=lambda d: f"{d['lines']} changes in {d['path']}")

    async def approve():
        approval = Path("APPROVED")
        if not approval.exists():
            wf.stop(f"waiting for approval: read {notes['path']}, then write your name into {approval.absolute()}")
        return approval.read_text().strip() or "someone"

    approved_by = await wf.stage("approve", approve, result={"type": "string"})

    async def publish():
        published = Path("published") / Path(notes["path"]).name
        published.parent.mkdir(exist_ok=True)
        published.write_text(Path(notes["path"]).read_text())
        return {"path": str(published), "approved_by": approved_by}

    return await wf.stage("publish", publish, result=PUBLISHED, summary=lambda p: p["path"])
