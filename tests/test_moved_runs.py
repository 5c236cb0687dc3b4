"""A run whose record is copied or moved with its folder continues in the folder it now lies in."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from conftest import Project

MOVES = """
import os
from pathlib import Path

import awf

async def first():
    return os.getcwd()

async def second():
    Path("b.txt").write_text(os.getcwd())
    return os.getcwd()

@awf.workflow(name="moves")
async def moves(wf):
    await wf.stage("a", first, result={"type": "string"})
    if not Path("GO").exists():
        wf.stop("waits for GO")
    return {"b": await wf.stage("b", second, result={"type": "string"}), "cwd": str(wf.cwd)}
"""


def _stopped(path: Path, *args: str) -> Project:
    """A project at `path` whose run moves/r stopped after stage a, in the folder `args` say."""
    path.mkdir()
    project = Project(path)
    project.write("wf.py", MOVES)
    result = project.awf("run", "wf.py", "--id", "r", *args)
    assert result.code == 3, result.stderr
    return project


def _run_line(run_dir: Path) -> dict[str, object]:
    return json.loads((run_dir / "run.jsonl").read_text().splitlines()[0])


def _forget_relative(run_dir: Path) -> None:
    """Make the record one written before runs kept their folder relative: the absolute one only."""
    log = run_dir / "run.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    del first["cwd_relative"]
    log.write_text(json.dumps(first) + "\n" + "".join(lines[1:]))


def test_a_new_run_keeps_its_folder_relative_to_the_folder_holding_its_record(tmp_path: Path):
    project = _stopped(tmp_path / "a")
    line = _run_line(project.run_dir("moves", "r"))
    assert line["cwd"] == str(project.path) and line["cwd_relative"] == "."
    (project.path / "GO").touch()
    result = project.awf("run", "wf.py", "--id", "r", "--continue", "--json")
    assert result.code == 0, result.stderr
    assert "made in" not in result.stderr  # not moved: nothing to say


def test_a_copied_project_continues_in_its_own_folder_and_says_so(tmp_path: Path):
    original = _stopped(tmp_path / "a")
    copy = Project(tmp_path / "b")
    shutil.copytree(original.path, copy.path, symlinks=True)
    (copy.path / "GO").touch()
    result = copy.awf("run", "wf.py", "--id", "r", "--continue", "--json")
    assert result.code == 0, result.stderr
    said = f"this run was made in {original.path}; it works in {copy.path}, where its record now is"
    assert said in result.stderr
    assert result.out["value"] == {"b": str(copy.path), "cwd": str(copy.path)}
    assert (copy.path / "b.txt").read_text() == str(copy.path)
    assert not (original.path / "b.txt").exists()  # the original is left as it was
    assert _run_line(copy.run_dir("moves", "r"))["cwd"] == str(original.path)  # the history is not rewritten
    # What awf prints to go on works from the copy as well.
    shown = copy.awf("runs", "moves/r", "--json")
    assert shown.code == 0 and "--cwd" not in json.dumps(shown.out), shown.stdout


def test_a_moved_project_continues_where_it_now_is(tmp_path: Path):
    original = _stopped(tmp_path / "a")
    moved = Project(tmp_path / "b")
    os.rename(original.path, moved.path)
    (moved.path / "GO").touch()
    result = moved.awf("run", "wf.py", "--id", "r", "--continue", "--json")
    assert result.code == 0, result.stderr
    assert f"this run was made in {original.path}; it works in {moved.path}" in result.stderr
    assert result.out["value"]["b"] == str(moved.path)


def test_a_run_in_a_subfolder_keeps_its_place_in_the_copy(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "sub").mkdir()
    root = tmp_path / "a" / ".awf" / "runs"
    original = Project(tmp_path / "a")
    original.write("wf.py", MOVES)
    result = original.awf("run", "wf.py", "--id", "r", "--cwd", "sub", "--run-root", str(root))
    assert result.code == 3, result.stderr
    assert _run_line(original.run_dir("moves", "r"))["cwd_relative"] == "sub"
    copy = Project(tmp_path / "b")
    shutil.copytree(original.path, copy.path, symlinks=True)
    (copy.path / "sub" / "GO").touch()
    result = copy.awf("run", "wf.py", "--id", "r", "--continue", "--run-root", ".awf/runs", "--json")
    assert result.code == 0, result.stderr
    assert result.out["value"]["b"] == str(copy.path / "sub")


def test_a_run_working_outside_the_folder_of_its_record_works_there_as_before(tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    original = _stopped(tmp_path / "a", "--cwd", str(elsewhere), "--run-root", ".awf/runs")
    line = _run_line(original.run_dir("moves", "r"))
    assert line["cwd"] == str(elsewhere) and "cwd_relative" not in line
    copy = Project(tmp_path / "b")
    shutil.copytree(original.path, copy.path, symlinks=True)
    (elsewhere / "GO").touch()
    result = copy.awf("run", "wf.py", "--id", "r", "--continue", "--run-root", ".awf/runs", "--json")
    assert result.code == 0, result.stderr
    assert "made in" not in result.stderr
    assert result.out["value"]["b"] == str(elsewhere)


def test_a_copied_old_record_asks_which_folder_and_cwd_says(tmp_path: Path):
    original = _stopped(tmp_path / "a")
    _forget_relative(original.run_dir("moves", "r"))
    copy = Project(tmp_path / "b")
    shutil.copytree(original.path, copy.path, symlinks=True)
    (copy.path / "GO").touch()
    refused = copy.awf("run", "wf.py", "--id", "r", "--continue")
    assert refused.code == 2, refused.stderr
    lines = refused.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("awf: run moves/r was made in "), refused.stderr
    assert str(original.path) in lines[0] and str(copy.path) in lines[0]
    assert f"--cwd {copy.path}" in lines[1]
    assert not (copy.path / "b.txt").exists()
    taken = copy.awf("run", "wf.py", "--id", "r", "--continue", "--cwd", str(copy.path), "--json")
    assert taken.code == 0, taken.stderr
    assert taken.out["value"]["b"] == str(copy.path)
    assert f"this run was made in {original.path}; it works in {copy.path}" in taken.stderr


def test_a_copied_old_record_works_where_it_was_made_when_cwd_says_so(tmp_path: Path):
    original = _stopped(tmp_path / "a")
    _forget_relative(original.run_dir("moves", "r"))
    copy = Project(tmp_path / "b")
    shutil.copytree(original.path, copy.path, symlinks=True)
    (original.path / "GO").touch()
    root = str(copy.path / ".awf" / "runs")
    result = copy.awf("run", "wf.py", "--id", "r", "--continue", "--cwd", str(original.path), "--run-root", root)
    assert result.code == 0, result.stderr
    assert (original.path / "b.txt").read_text() == str(original.path)
    assert "made in" not in result.stderr


def test_a_moved_old_record_names_where_it_now_is(tmp_path: Path):
    original = _stopped(tmp_path / "a")
    _forget_relative(original.run_dir("moves", "r"))
    moved = Project(tmp_path / "b")
    os.rename(original.path, moved.path)
    refused = moved.awf("run", "wf.py", "--id", "r", "--continue")
    assert refused.code == 2, refused.stderr
    assert "which is no longer a folder" in refused.stderr and f"give --cwd {moved.path}" in refused.stderr


def test_a_continue_given_another_cwd_is_refused_naming_both_folders(tmp_path: Path):
    original = _stopped(tmp_path / "a")
    copy = Project(tmp_path / "b")
    shutil.copytree(original.path, copy.path, symlinks=True)
    other = tmp_path / "c"
    other.mkdir()
    root = str(copy.path / ".awf" / "runs")
    refused = copy.awf("run", "wf.py", "--id", "r", "--continue", "--cwd", str(other), "--run-root", root)
    assert refused.code == 2, refused.stderr
    assert refused.stderr == (
        f"awf: run moves/r works in {original.path} or {copy.path}, not {other}: a continue keeps the run's --cwd\n"
    )


def test_a_copied_run_with_a_sandbox_is_refused_naming_where_it_was_made(tmp_path: Path):
    original = _stopped(tmp_path / "a", "--sandbox", "workspace")
    copy = Project(tmp_path / "b")
    shutil.copytree(original.path, copy.path, symlinks=True)
    (copy.path / "GO").touch()
    refused = copy.awf("run", "wf.py", "--id", "r", "--continue")
    assert refused.code == 2, refused.stderr
    lines = refused.stderr.splitlines()
    assert len(lines) == 2 and f"made in {original.path} with a sandbox" in lines[0], refused.stderr
    assert f"--cwd {original.path} --run-root {copy.path / '.awf' / 'runs'}" in lines[1]
    assert not (copy.path / "b.txt").exists()
