"""`awf set`: a stage's value given by hand, checked first, recorded as an `edited` line."""

from __future__ import annotations

import getpass
import hashlib
import json

from conftest import Project, finish
from reading_runs import release, run, start_waiting, write_steps


def sha(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def test_a_value_that_fits_replaces_the_record_and_is_logged_as_edited(project: Project):
    write_steps(project)
    assert run(project, "s1", "complete").code == 0
    project.write("plan.json", '{"doc": "docs/NEW.md"}')

    done = project.awf("set", "steps/s1", "plan", "plan.json")
    assert done.code == 0, done.stderr
    assert done.stdout == ""
    assert "build, review were computed from the old value" in done.stderr
    assert "--from-stage build" in done.stderr
    record = project.stage("steps", "s1", "plan")
    assert record["value"] == {"doc": "docs/NEW.md"} and record["outcome"] == "succeeded"
    [edited] = [line for line in project.log("steps", "s1") if line["kind"] == "edited"]
    assert edited["stage"] == "plan" and edited["by"] == getpass.getuser()
    assert edited["old"] == sha({"doc": "docs/s1.md"}) and edited["new"] == sha({"doc": "docs/NEW.md"})
    logs = project.awf("logs", "steps/s1").stdout
    assert f"✎ plan  value set by {getpass.getuser()} with awf set (sha256 {edited['old'][:12]}" in logs
    assert "succeeded, edited" in project.awf("runs", "steps/s1").stdout

    # A string from stdin, for a stage whose result is a string.
    given = project.awf("set", "steps/s1", "review", "-", input='"approved by hand"')
    assert given.code == 0, given.stderr
    assert project.stage("steps", "s1", "review")["value"] == "approved by hand"


def test_a_value_that_does_not_fit_is_refused_with_every_problem_and_nothing_is_written(project: Project):
    write_steps(project)
    assert run(project, "s2", "complete").code == 0
    folder = project.run_dir("steps", "s2")
    before = {path.name: path.read_bytes() for path in [folder / "run.jsonl", *(folder / "stages").iterdir()]}

    bad = project.awf("set", "steps/s2", "plan", "-", input='{"doc": 5}')
    assert bad.code == 2
    assert bad.stderr.startswith("awf: the value does not fit stage plan's result; nothing was written:")
    assert "5 is not of type 'string'" in bad.stderr
    assert bad.stdout == ""
    not_json = project.awf("set", "steps/s2", "plan", "-", input="{doc")
    assert not_json.code == 2 and "awf: stdin is not JSON" in not_json.stderr
    unknown = project.awf("set", "steps/s2", "deploy", "-", input="1")
    assert unknown.code == 2 and "has no record of stage deploy" in unknown.stderr
    missing = project.awf("set", "steps/nope", "plan", "-", input="1")
    assert missing.code == 1 and "there is no run steps/nope" in missing.stderr
    after = {path.name: path.read_bytes() for path in [folder / "run.jsonl", *(folder / "stages").iterdir()]}
    assert after == before


def test_edit_opens_the_editor_on_an_indented_copy_and_checks_what_it_leaves(project: Project):
    write_steps(project)
    assert run(project, "s3", "complete").code == 0
    editor = project.write(
        "editor.sh",
        """
        #!/bin/sh
        cp "$1" seen.json
        printf '{"doc": "docs/EDITOR.md"}\\n' > "$1"
        """,
    )
    editor.chmod(0o755)
    done = project.awf("set", "--edit", "steps/s3", "plan", env={"EDITOR": str(editor), "VISUAL": ""})
    assert done.code == 0, done.stderr
    assert (project.path / "seen.json").read_text() == '{\n  "doc": "docs/s3.md"\n}\n'
    assert project.stage("steps", "s3", "plan")["value"] == {"doc": "docs/EDITOR.md"}

    breaker = project.write("breaker.sh", "#!/bin/sh\nprintf '[]' > \"$1\"\n")
    breaker.chmod(0o755)
    bad = project.awf("set", "--edit", "steps/s3", "plan", env={"VISUAL": str(breaker)})
    assert bad.code == 2 and "is not of type 'object'" in bad.stderr
    assert project.stage("steps", "s3", "plan")["value"] == {"doc": "docs/EDITOR.md"}


def test_a_run_with_a_live_attempt_is_refused(project: Project):
    write_steps(project)
    live = start_waiting(project, "s4")
    try:
        refused = project.awf("set", "steps/s4", "plan", "-", input='{"doc": "x"}')
        assert refused.code == 2, refused.stderr
        assert (
            refused.stderr.startswith("awf: run steps/s4 is taken by attempt 1") and "still running" in refused.stderr
        )
        assert project.stage("steps", "s4", "plan")["value"] == {"doc": "docs/s4.md"}
    finally:
        release(project, "s4")
        assert finish(live).code == 0


def test_the_next_continue_reuses_the_value_and_says_what_was_computed_from_the_old_one(project: Project):
    write_steps(project)
    # A stage that stopped, given its value by hand: marked done, and the continue goes on after it.
    assert run(project, "s5", "stop").code == 3
    assert project.awf("set", "steps/s5", "build", "-", input='{"branch": "fix/by-hand"}').code == 0
    again = project.awf("run", "steps.py", "--id", "s5", "--continue", "--json")
    assert again.code == 0, again.stderr
    assert [(s["stage"], s["how"]) for s in again.out["stages"]] == [
        ("plan", "reused"),
        ("build", "reused"),
        ("review", "ran"),
    ]
    assert again.out["value"] == "approved fix/by-hand"
    assert "computed from its old value" not in again.stderr

    # A value set under stages recorded after it: the continue reuses them and says so.
    assert run(project, "s6", "complete").code == 0
    assert project.awf("set", "steps/s6", "plan", "-", input='{"doc": "docs/other.md"}').code == 0
    redo = project.awf("run", "steps.py", "--id", "s6", "--continue", "--from-stage", "review")
    assert redo.code == 0, redo.stderr
    assert (
        "stage plan's value was set with awf set after build was computed from its old value; it is reused as it is: "
        "to redo it from the new value, go on with --from-stage build"
    ) in redo.stderr
    quiet = project.awf("run", "steps.py", "--id", "s6", "--continue", "--from-stage", "build")
    assert quiet.code == 0 and "old value" not in quiet.stderr
