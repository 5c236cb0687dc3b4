"""Many runs in one repository: each with `--worktree` in a git worktree and on a branch of its
own, found again by every continue; no two attempts in one folder unawares; `awf clean`.

Real git, the real CLI in subprocesses, real signals.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import Project

# Each run's stage appends the run's name to notes.txt and commits it: on one branch per run, each
# branch must hold its own run's commit only. With HOLD set, each stage says it is there
# (HOLD.STAGE.reached) and waits for HOLD.STAGE before it writes.
EDIT = """
import os
import subprocess
import time
import time
from pathlib import Path

import awf


def commit(line):
    hold = os.environ.get("HOLD")
    if hold:
        stage = line.split()[-1]
        Path(f"{hold}.{stage}.reached").touch()
        while not Path(f"{hold}.{stage}").exists():
            time.sleep(0.02)
    with open("notes.txt", "a") as notes:
        notes.write(line + "\\n")
    subprocess.run(["git", "commit", "-qam", line], check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


@awf.workflow(name="edit", version="1.0.0", prepare=lambda argv: {"ticket": argv[0]}, id=lambda args: args["ticket"])
async def edit(wf, ticket):
    first = await wf.stage("first", lambda: commit(f"{ticket}: first"), result={"type": "string"})
    second = await wf.stage("second", lambda: commit(f"{ticket}: second"), result={"type": "string"})
    return {"first": first, "second": second, "cwd": os.getcwd()}
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(project: Project) -> Project:
    """The project as a git repository with one commit, holding the workflow."""
    git(project.path, "init", "-q", "-b", "main")
    project.env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    project.write("notes.txt", "notes\n")
    project.write("edit.py", EDIT)
    subprocess.run(["git", "add", "."], cwd=project.path, check=True)
    subprocess.run(["git", "commit", "-qm", "start"], cwd=project.path, check=True, env=project.env)
    return project


def worktree_of(project: Project, run_id: str) -> Path:
    return project.path / ".awf" / "worktrees" / "edit" / run_id


def test_three_runs_at_once_each_commit_on_a_branch_of_their_own_and_leave_the_checkout_alone(repo: Project):
    base = git(repo.path, "rev-parse", "HEAD")
    started = [repo.start("run", "edit.py", "--worktree", "--", ticket) for ticket in ("12", "13", "14")]
    for process in started:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr

    for ticket in ("12", "13", "14"):
        branch = f"awf/edit/{ticket}"
        assert git(repo.path, "log", "--format=%s", f"{base}..{branch}").splitlines() == [
            f"{ticket}: second",
            f"{ticket}: first",
        ]
        assert git(repo.path, "show", f"{branch}:notes.txt") == f"notes\n{ticket}: first\n{ticket}: second"
        [run_line] = [line for line in repo.log("edit", ticket) if line["kind"] == "run"]
        assert run_line["worktree"] == {
            "repository": str(repo.path),
            "path": str(worktree_of(repo, ticket)),
            "branch": branch,
            "base": base,
            "base_ref": "HEAD",
        }
        assert run_line["cwd"] == str(worktree_of(repo, ticket))
        out = json.loads((repo.run_dir("edit", ticket) / "out.json").read_text())
        assert out["value"]["cwd"] == str(worktree_of(repo, ticket))
        assert out["worktree"] == {"path": str(worktree_of(repo, ticket)), "branch": branch, "base": base}
    assert (repo.path / "notes.txt").read_text() == "notes\n"
    assert git(repo.path, "rev-parse", "HEAD") == base
    assert git(repo.path, "status", "--porcelain") == ""  # .awf keeps out of the checkout's status
    listed = git(repo.path, "worktree", "list", "--porcelain")
    assert sorted(line.split()[1] for line in listed.splitlines() if line.startswith("worktree ")) == sorted(
        [str(repo.path), *(str(worktree_of(repo, ticket)) for ticket in ("12", "13", "14"))]
    )
    runs = repo.awf("runs")
    assert runs.stdout.splitlines()[0].split()[-1] == "branch"
    assert "awf/edit/13" in runs.stdout


def test_a_run_killed_mid_stage_continues_in_the_same_worktree_and_reuses_what_succeeded(repo: Project):
    hold = repo.path / "hold"
    process = repo.start("run", "edit.py", "--worktree", "--", "7", env={"HOLD": str(hold)})
    repo.wait_for(Path(f"{hold}.first.reached"))
    first = repo.stage("edit", "7", "first")
    assert first is None  # held in the first stage
    Path(f"{hold}.first").touch()
    repo.wait_for(Path(f"{hold}.second.reached"))  # now held in the second
    assert (repo.run_dir("edit", "7") / "stages" / "first.json").exists()
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)

    Path(f"{hold}.second").touch()
    done = repo.awf("run", "edit.py", "--id", "7", "--continue", "--worktree")
    assert done.code == 0, done.stderr
    out = json.loads((repo.run_dir("edit", "7") / "out.json").read_text())
    assert [(stage["stage"], stage["how"]) for stage in out["stages"]] == [("first", "reused"), ("second", "ran")]
    assert out["value"]["cwd"] == str(worktree_of(repo, "7"))
    assert git(repo.path, "log", "--format=%s", "-2", "awf/edit/7").splitlines() == ["7: second", "7: first"]
    assert "branch:  awf/edit/7: git log awf/edit/7" in done.stdout + done.stderr


def test_a_worktree_removed_by_hand_is_made_again_from_its_branch_and_the_attempt_says_so(repo: Project):
    assert repo.awf("run", "edit.py", "--worktree", "--", "8").code == 0
    shutil.rmtree(worktree_of(repo, "8"))

    redo = repo.awf("run", "edit.py", "--id", "8", "--continue", "--from-stage", "second")
    assert redo.code == 0, redo.stderr
    assert f"the run's worktree {worktree_of(repo, '8')} was gone; made it again from its branch awf/edit/8" in (
        redo.stdout + redo.stderr
    )
    assert git(repo.path, "log", "--format=%s", "-3", "awf/edit/8").splitlines() == [
        "8: second",
        "8: second",
        "8: first",
    ]


def test_a_run_whose_branch_is_gone_stops_naming_it(repo: Project):
    assert repo.awf("run", "edit.py", "--worktree", "--", "9").code == 0
    git(repo.path, "worktree", "remove", "--force", str(worktree_of(repo, "9")))
    git(repo.path, "branch", "-D", "awf/edit/9")

    redo = repo.awf("run", "edit.py", "--id", "9", "--continue", "--from-stage", "second")
    assert redo.code == 3, redo.stderr
    assert "the run's branch awf/edit/9 is gone" in redo.stdout + redo.stderr
    assert not worktree_of(repo, "9").exists()


def test_a_continue_keeps_the_worktree_and_its_base(repo: Project):
    base = git(repo.path, "rev-parse", "HEAD")
    (repo.path / "later.txt").write_text("later\n")
    git(repo.path, "add", "later.txt")
    subprocess.run(["git", "commit", "-qm", "later"], cwd=repo.path, check=True, env=repo.env)
    assert repo.awf("run", "edit.py", "--worktree", "--base", base, "--", "10").code == 0
    assert not (worktree_of(repo, "10") / "later.txt").exists()  # the branch starts at --base

    other = repo.awf("run", "edit.py", "--id", "10", "--continue", "--from-stage", "second", "--base", "main")
    assert other.code == 2
    assert f"was started with --base {base} ({base[:12]}), not main" in other.stderr
    same = repo.awf("run", "edit.py", "--id", "10", "--continue", "--from-stage", "second", "--base", base)
    assert same.code == 0, same.stderr

    assert repo.awf("run", "edit.py", "--", "11").code == 0
    refused = repo.awf("run", "edit.py", "--id", "11", "--continue", "--from-stage", "second", "--worktree")
    assert refused.code == 2
    assert "not in a worktree of its own: --worktree is for a new run" in refused.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--base", "main"], "--base goes only with --worktree"),
        (["--worktree", "--base", "no-such-ref"], "--base no-such-ref is not a commit of"),
    ],
)
def test_a_worktree_that_cannot_be_made_is_refused_recording_nothing(repo: Project, args: list[str], said: str):
    refused = repo.awf("run", "edit.py", *args, "--", "20")
    assert refused.code == 2
    assert said in refused.stderr
    assert not repo.run_dir("edit", "20").exists()


def test_worktree_outside_a_repository_is_refused(project: Project):
    project.write("edit.py", EDIT)
    refused = project.awf("run", "edit.py", "--worktree", "--", "1")
    assert refused.code == 2
    assert "--worktree needs a git repository" in refused.stderr
    assert not (project.path / ".awf" / "runs" / "edit").exists()


def test_a_second_run_in_a_folder_with_a_live_attempt_is_refused_naming_it_and_share_folder_runs_beside(
    repo: Project,
):
    hold = repo.path / "hold"
    first = repo.start("run", "edit.py", "--", "30", env={"HOLD": str(hold)})
    repo.wait_for(Path(f"{hold}.first.reached"))
    try:
        second = repo.awf("run", "edit.py", "--", "31")
        pid = next(line["pid"] for line in repo.log("edit", "30") if line["kind"] == "attempt-start")
        assert second.code == 2
        assert f"run edit/30 works in {repo.path} (attempt 1, pid {pid} on" in second.stderr
        assert "Give --worktree" in second.stderr and "--share-folder" in second.stderr
        assert not repo.run_dir("edit", "31").exists()

        reader = repo.write(
            "reader.py",
            """
            import awf

            @awf.workflow(name="reader", version="1.0.0")
            async def reader(wf):
                return await wf.stage("read", lambda: open("notes.txt").read(), result={"type": "string"})
            """,
        )
        beside = repo.awf("run", str(reader), "--id", "r", "--share-folder")
        assert beside.code == 0, beside.stderr
        assert repo.log("reader", "r")[0]["share_folder"] is True
        elsewhere = repo.awf("run", "edit.py", "--worktree", "--", "32")
        assert elsewhere.code == 0, elsewhere.stderr  # a worktree of its own: no folder shared
    finally:
        Path(f"{hold}.first").touch()
        Path(f"{hold}.second").touch()
        first.communicate(timeout=60)
    assert first.returncode == 0
    assert repo.awf("run", "edit.py", "--", "31").code == 0


def test_clean_removes_a_finished_runs_worktree_and_keeps_its_branch_and_record(repo: Project):
    assert repo.awf("run", "edit.py", "--worktree", "--", "40").code == 0
    assert repo.awf("run", "edit.py", "--worktree", "--", "41").code == 0
    (worktree_of(repo, "41") / "draft.txt").write_text("not committed\n")

    kept = repo.awf("clean", "edit/41")
    assert kept.code == 2
    assert "has changes nobody committed" in kept.stderr and "--force" in kept.stderr
    assert worktree_of(repo, "41").is_dir()

    shown = json.loads(repo.awf("runs", "edit/41", "--json").stdout)["worktree"]
    assert shown["branch"] == "awf/edit/41" and shown["changes"] is True and shown["exists"] is True

    cleaned = repo.awf("clean", "--completed")
    assert cleaned.code == 2  # 41 kept, saying why
    assert f"removed run edit/40's worktree {worktree_of(repo, '40')}" in cleaned.stdout
    assert "edit/41" in cleaned.stderr
    forced = repo.awf("clean", "edit/41", "--force")
    assert forced.code == 0, forced.stderr
    assert not worktree_of(repo, "40").exists() and not worktree_of(repo, "41").exists()
    assert git(repo.path, "worktree", "list").count("\n") == 0  # the checkout alone
    assert git(repo.path, "branch", "--list", "awf/*").split() == ["awf/edit/40", "awf/edit/41"]
    assert repo.run_dir("edit", "40").is_dir()
    assert json.loads(repo.awf("runs", "edit/40", "--json").stdout)["worktree"]["exists"] is False

    again = repo.awf("run", "edit.py", "--id", "40", "--continue", "--from-stage", "second")
    assert again.code == 0, again.stderr
    assert worktree_of(repo, "40").is_dir()


def test_clean_refuses_a_run_with_a_live_attempt_and_a_run_with_no_worktree(repo: Project):
    hold = repo.path / "hold"
    live = repo.start("run", "edit.py", "--worktree", "--", "50", env={"HOLD": str(hold)})
    repo.wait_for(Path(f"{hold}.first.reached"))
    try:
        refused = repo.awf("clean", "edit/50")
        assert refused.code == 2
        assert "has a live attempt" in refused.stderr
    finally:
        Path(f"{hold}.first").touch()
        Path(f"{hold}.second").touch()
        live.communicate(timeout=60)
    assert worktree_of(repo, "50").is_dir()
    assert repo.awf("run", "edit.py", "--", "51").code == 0
    plain = repo.awf("clean", "edit/51")
    assert plain.code == 2
    assert "not in a worktree of its own" in plain.stderr
    assert repo.awf("clean").code == 2


# An exec agent in a sandboxed worktree run: commits on its own branch, then tries to write what
# belongs to the repository's checkout, to another run, and to the git state they share.
TRYER = """
import json
import subprocess
import time
import sys
from pathlib import Path

repo, other = Path(sys.argv[1]), Path(sys.argv[2])


def git(*args):
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    if done.returncode:
        raise OSError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "git failed")


def commit():
    Path("notes.txt").write_text("written in the sandbox\\n")
    git("commit", "-qam", "sandboxed")


tries = {
    "commit": commit,
    "main_checkout": lambda: (repo / "notes.txt").write_text("x"),
    "other_worktree": lambda: (other / "notes.txt").write_text("x"),
    "main_branch": lambda: git("update-ref", "refs/heads/main", "HEAD"),
    "other_branch": lambda: git("update-ref", "refs/heads/awf/edit/60", "HEAD"),
    "new_branch": lambda: git("branch", "elsewhere"),
    "hooks": lambda: (repo / ".git" / "hooks" / "post-commit").write_text("#!/bin/sh\\n"),
    "config": lambda: git("config", "core.hooksPath", "/tmp"),
}
results = {}
for name, attempt in tries.items():
    try:
        attempt()
        results[name] = "ok"
    except OSError as error:
        results[name] = f"refused: {error}"
sys.exit(subprocess.run(["awf", "answer", json.dumps(results)]).returncode)
"""

BOXED = """
import sys

import awf


@awf.workflow(name="boxed", version="1.0.0", prepare=lambda argv: {"repo": argv[0], "other": argv[1]})
async def boxed(wf, repo, other):
    async def work():
        command = [sys.executable, "tryer.py", repo, other]
        agent = await wf.agents.open(key="tryer", runtime={"harness": "exec", "command": command})
        turn = await agent.run(prompt="Try.", schema={"type": "object"})
        if not turn.outcome.answered:
            wf.stop(f"{turn.outcome.kind}: {turn.outcome.reason}")
        return turn.outcome.value

    return await wf.stage("try", work, result={})
"""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)")
def test_a_sandboxed_agent_commits_on_its_branch_and_cannot_write_the_checkout_or_another_run(repo: Project):
    repo.write("tryer.py", TRYER)
    repo.write("boxed.py", BOXED)
    subprocess.run(["git", "add", "."], cwd=repo.path, check=True)
    subprocess.run(["git", "commit", "-qm", "the tryer"], cwd=repo.path, check=True, env=repo.env)
    base = git(repo.path, "rev-parse", "HEAD")
    assert repo.awf("run", "edit.py", "--worktree", "--", "60").code == 0
    other_branch = git(repo.path, "rev-parse", "awf/edit/60")
    config = (repo.path / ".git" / "config").read_text()

    done = repo.awf(
        "run", "boxed.py", "--id", "s", "--worktree", "--sandbox", "workspace", "--",
        str(repo.path), str(worktree_of(repo, "60")),
    )  # fmt: skip

    assert done.code == 0, done.stderr
    tried = repo.stage("boxed", "s", "try")["value"]
    assert tried["commit"] == "ok"
    for refused in ("main_branch", "other_branch", "new_branch", "hooks", "config"):
        assert tried[refused].startswith("refused"), (refused, tried)
    # The checkout and the other worktree are not in the sandbox at all: a write there lands, at
    # most, in the sandbox's own /tmp (where the test's repository is): never in the files outside.
    assert git(repo.path, "log", "--format=%s", "-1", "awf/boxed/s") == "sandboxed"
    assert git(repo.path, "show", "awf/boxed/s:notes.txt") == "written in the sandbox"
    assert (repo.path / "notes.txt").read_text() == "notes\n"
    assert (worktree_of(repo, "60") / "notes.txt").read_text() == "notes\n60: first\n60: second\n"
    assert git(repo.path, "rev-parse", "main") == base
    assert git(repo.path, "rev-parse", "awf/edit/60") == other_branch
    assert git(repo.path, "branch", "--list", "elsewhere") == ""
    assert not (repo.path / ".git" / "hooks" / "post-commit").exists()
    assert (repo.path / ".git" / "config").read_text() == config


WAITER = """
import awf


@awf.workflow(name="waiter", version="1.0.0", events={"ci": None})
async def waiter(wf):
    ci = await wf.events.receive("ci")
    return await wf.stage("note", lambda: ci.value, result={})
"""


def test_a_parked_run_whose_folder_is_in_use_is_not_woken_and_not_counted_a_crash_then_wakes_once_free(
    repo: Project,
):
    repo.write("waiter.py", WAITER)
    parked = repo.awf("run", "waiter.py", "--id", "w")
    assert parked.code == 0 and "parked" in parked.stderr, parked.stderr
    hold = repo.path / "hold"
    live = repo.start("run", "edit.py", "--", "70", env={"HOLD": str(hold)})
    repo.wait_for(Path(f"{hold}.first.reached"))
    try:
        sent = repo.awf("send", "waiter/w", "ci", "--data", '{"passed": true}')
        assert sent.code == 0, sent.stderr
        assert "its folder is in use: run edit/70 works in" in sent.stderr
        assert "awf wake" in sent.stderr
        woken = repo.awf("wake")
        assert woken.code == 0, woken.stderr
        assert "its folder is in use" in woken.stderr
        assert [line["kind"] for line in repo.log("waiter", "w")].count("attempt-start") == 1
        assert repo.awf("runs", "waiter/w", "--json").out["status"] == "parked"
    finally:
        Path(f"{hold}.first").touch()
        Path(f"{hold}.second").touch()
        live.communicate(timeout=60)
    assert live.returncode == 0

    assert repo.awf("wake").code == 0
    ended = repo.run_dir("waiter", "w") / "out.json"
    repo.wait_for(ended)
    for _ in range(300):
        if json.loads(ended.read_text())["outcome"] == "completed":
            break
        time.sleep(0.1)
    assert json.loads(ended.read_text())["value"] == {"passed": True}


HOLDS = """
import asyncio
from pathlib import Path

import awf


@awf.workflow(name="holds", version="1.0.0")
async def holds(wf):
    async def wait():
        Path("reached").touch()
        while not Path("go").exists():
            await asyncio.sleep(0.02)

    await wf.stage("wait", wait)
"""


def test_an_empty_git_folder_above_two_projects_does_not_make_them_one_checkout(project: Project):
    # A sandbox that hides .git folders (codex's) makes an empty one where it mounts, even in /tmp.
    (project.path / ".git").mkdir()
    workflow = project.write("holds.py", HOLDS)
    first, second = project.path / "a", project.path / "b"
    first.mkdir()
    second.mkdir()
    held = project.start("run", str(workflow), "--cwd", str(first), "--id", "a")
    try:
        project.wait_for(first / "reached")
        (second / "go").touch()
        beside = project.awf("run", str(workflow), "--cwd", str(second), "--id", "b")
        assert beside.code == 0, beside.stderr
    finally:
        (first / "go").touch()
        held.communicate(timeout=60)
    assert held.returncode == 0
