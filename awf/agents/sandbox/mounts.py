"""What a sandbox mounts where: the plan of its file system, in the order bubblewrap makes it.

The machine's tree is left out but for what the agent needs: the system folders, the programs it
runs, the profile's paths, its own folder in the record. Inside a folder the agent writes, what
runs outside stays read-only (the workflow file and the modules it imported, the repository's
hooks, config and info) and awf's records are hidden; each such mount is pinned, and so are the
folders on the way to it (a folder bound onto itself cannot be renamed away: EBUSY), so that the
agent cannot move what holds it and put a copy of its own in its place.

A mount of a path inside a folder an agent may write is made from a descriptor opened without
following links (`guard`, launch.py), so a link put there never mounts what it points to.
A read inside a folder already seen is not mounted again, for the same reason.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Files of the system that hold secrets, readable by root even without its capabilities: an empty
# one in each one's place (folders: an empty folder).
SECRET_FILES = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/security/opasswd",
    "/etc/ssh/ssh_host_*_key",
)
SECRET_FOLDERS = ("/etc/sudoers.d",)
# What of a repository's folder runs code outside when git runs there: read-only inside; the rest
# (objects, refs, the index) stays writable, so an agent can commit.
GIT_RUNS = ("hooks", "config", "config.worktree", "info", "modules")
GIT_MADE = ("hooks", "info")  # made empty and read-only where they are missing


@dataclass(frozen=True)
class Mount:
    """One step of the plan, as launch.py takes it: [kind, path, guard or target, size]."""

    kind: str  # ro, ro-try, rw, link, dev, proc, tmpfs, empty, hide
    path: str
    guard: str | None = None  # the folder agents write that `path` lies in; for `link`, its target
    size: int | None = None  # bytes, for a tmpfs

    def as_list(self) -> list[str | int | None]:
        return [self.kind, self.path, self.guard, self.size]


@dataclass(frozen=True)
class Layout:
    """What one agent's sandbox is made of."""

    writes: Sequence[str]  # the profile's: read and written
    reads: Sequence[str]  # the profile's, the programs it runs, awf's own install: read only
    cwd: str  # where it works
    agent_dir: str  # its own folder in the record: written
    shim_dir: str  # the `awf` it answers with: read only
    records: str  # the run root: hidden, but for the agent's own folder
    protected: Sequence[str]  # files that run outside (the workflow and its modules): read only
    writers: Sequence[str]  # every folder an agent of the run may write: what guards a mount
    tmp_bytes: int | None
    shm_bytes: int | None


def plan(layout: Layout) -> tuple[list[Mount], str]:
    """The mounts, in order, and the folder hidden under an empty tmpfs (remounted read-only last)."""
    steps: list[Mount] = []
    for folder in SYSTEM:
        if os.path.islink(folder):
            steps.append(Mount("link", folder, os.readlink(folder)))
        elif os.path.isdir(folder):
            steps.append(Mount("ro", folder))
    steps += [Mount("dev", "/dev"), Mount("proc", "/proc"), Mount("tmpfs", "/tmp", size=layout.tmp_bytes)]
    steps.append(Mount("tmpfs", "/dev/shm", size=layout.shm_bytes))
    steps += _secrets()
    hidden = _hidden(layout)
    steps += _ordered(_tree(layout, hidden), layout.writers, hidden)
    return steps, hidden


def _secrets() -> list[Mount]:
    found = [Mount("hide", path) for pattern in SECRET_FILES for path in sorted(glob.glob(pattern))]
    return found + [Mount("empty", path) for path in SECRET_FOLDERS if os.path.isdir(path)]


def _hidden(layout: Layout) -> str:
    """Where the records are hidden: the whole `.awf` folder when it is theirs, else the run root."""
    records = Path(layout.records)
    return str(records.parent) if records.parent.name == ".awf" else str(records)


def _tree(layout: Layout, hidden: str) -> list[Mount]:
    """The agent's part of the tree, in no order yet: the writes, the reads, the hidden records,
    its own folder, and what is protected inside the writes."""
    writes = _outermost(layout.writes)
    mounts = [Mount("rw", path) for path in writes]
    seen = list(writes)
    for path in [*(() if _inside_any(layout.cwd, writes) else (layout.cwd,)), *layout.reads]:
        if _is_system(path) or _inside_any(path, seen) or _inside(path, hidden):
            continue  # seen already, through a folder whose own mount shows it as it is
        mounts.append(Mount("ro-try", path))
        seen.append(path)
    mounts += [Mount("tmpfs", hidden), Mount("rw", layout.agent_dir), Mount("ro", layout.shim_dir)]
    protected = [path for path in layout.protected if _inside_any(path, writes) and os.path.isfile(path)]
    mounts += [Mount("ro", path) for path in protected]
    mounts += _git(layout.cwd, writes)
    return mounts


def _git(cwd: str, writes: Sequence[str]) -> list[Mount]:
    """The repository `cwd` is in, where agents write it: what git runs stays read-only."""
    entry = _git_entry(cwd)
    if entry is not None and os.path.isfile(entry) and _awf_branch(entry) is not None:
        return _run_worktree(entry, writes)
    if entry is None or not _inside_any(entry, writes):
        return []
    mounts: list[Mount] = []
    folders = [entry] if os.path.isdir(entry) else []
    if os.path.isfile(entry):
        mounts.append(Mount("ro", entry))  # `gitdir: …` cannot be pointed elsewhere
        folders += _linked_git_dirs(entry)
    for folder in folders:
        if not _inside_any(folder, writes):
            continue
        mounts.append(Mount("rw", folder))  # pinned: it cannot be swapped for one of the agent's
        for name in GIT_RUNS:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                # A link the repository's owner made (hooks kept in a tracked folder): what it leads
                # to is kept read-only; the link itself, an entry of a folder git must write, is not.
                target = os.path.realpath(path)
                if _inside_any(target, writes) and os.path.exists(target):
                    mounts.append(Mount("ro", target))
            elif os.path.exists(path):
                mounts.append(Mount("ro", path))
            elif name in GIT_MADE:
                mounts.append(Mount("empty", path))
    return mounts


def _awf_branch(entry: str) -> str | None:
    """The branch of the run whose worktree `entry` (its `.git` file) is in: awf makes the worktree
    of run W/ID at `.awf/worktrees/W/ID`, on the branch `awf/W/ID`. Known from the path alone, not
    from files the agent may have written."""
    parts = Path(entry).parent.parts
    if len(parts) >= 4 and parts[-4:-2] == (".awf", "worktrees"):
        return f"awf/{parts[-2]}/{parts[-1]}"
    return None


def _run_worktree(entry: str, writes: Sequence[str]) -> list[Mount]:
    """A run's own worktree: the repository's git folder readable, and where the worktree is
    written, what a commit on the run's branch writes (new objects, the worktree's index and HEAD,
    the branch's ref and its log). Everything else of the repository stays read-only: its config
    and hooks, other branches, the packs and other runs' refs already there, the main checkout."""
    mounts = [Mount("ro", entry)]  # `gitdir: …` cannot be pointed elsewhere
    linked = _linked_git_dirs(entry)
    if len(linked) < 2:
        return mounts
    gitdir, common = linked[0], linked[1]
    mounts += [Mount("ro-try", common), Mount("ro-try", gitdir)]
    branch = _awf_branch(entry)
    if branch is None or not _inside_any(entry, writes) or _inside_any(common, writes):
        return mounts
    # What is kept read-only inside these folders is mounted from a descriptor opened without
    # following links (guarded by the folder): an earlier turn may have written there.
    mounts.append(Mount("rw", gitdir))
    mounts += _kept(gitdir, gitdir, ("commondir", "gitdir", "config.worktree"))
    objects = os.path.join(common, "objects")
    mounts.append(Mount("rw", objects))
    for kept in ("info", "pack"):
        folder = os.path.join(objects, kept)
        if os.path.isdir(folder) and not os.path.islink(folder):
            mounts.append(Mount("ro", folder, objects))  # the packs: the repository's history
    for refs in ("refs/heads", "logs/refs/heads"):
        folder = os.path.join(common, refs, os.path.dirname(branch))
        if not os.path.isdir(folder):
            continue
        mounts.append(Mount("rw", folder))
        others = [name for name in sorted(os.listdir(folder)) if name != os.path.basename(branch)]
        mounts += _kept(folder, folder, others)
    return mounts


def _kept(folder: str, guard: str, names: Iterable[str]) -> list[Mount]:
    """The plain files among `names` in `folder`, read-only and pinned: not replaced, not removed."""
    found = []
    for name in names:
        path = os.path.join(folder, name)
        if os.path.isfile(path) and not os.path.islink(path):
            found.append(Mount("ro", path, guard))
    return found


def _git_entry(cwd: str) -> str | None:
    """The `.git` (folder or file) of the repository `cwd` is in, or None."""
    folder = Path(cwd)
    for each in (folder, *folder.parents):
        candidate = each / ".git"
        if os.path.lexists(candidate):
            return str(candidate)
    return None


def _linked_git_dirs(entry: str) -> list[str]:
    """The folders a `.git` file leads to: its gitdir, and the common folder a worktree's names."""
    try:
        text = Path(entry).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if not text.startswith("gitdir:"):
        return []
    gitdir = os.path.normpath(os.path.join(os.path.dirname(entry), text[len("gitdir:") :].strip()))
    found = [gitdir]
    try:
        common = Path(gitdir, "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return found
    return [*found, os.path.normpath(os.path.join(gitdir, common))]


def _ordered(mounts: list[Mount], writers: Sequence[str], hidden: str) -> list[Mount]:
    """The mounts outer folders first; each inside a folder agents write guarded, with a pin for
    each folder between that one and it. Inside the hidden records nothing is pinned: agents see
    nothing of it but their own folders. The last word on a path wins."""
    writers = _outermost(writers)
    by_path: dict[str, Mount] = {}
    for mount in mounts:
        guard = None if _inside(mount.path, hidden) and mount.path != hidden else _guard(mount.path, writers)
        if guard is not None:
            for folder in _between(guard, mount.path):
                by_path.setdefault(folder, Mount("rw", folder, guard))
            if mount.kind in ("ro", "ro-try", "rw"):
                mount = Mount(mount.kind, mount.path, guard)
        by_path[mount.path] = mount
    return sorted(by_path.values(), key=lambda mount: len(Path(mount.path).parts))


def _guard(path: str, writers: Sequence[str]) -> str | None:
    """The folder agents write that `path` lies strictly inside, or None."""
    for writer in writers:
        if path != writer and Path(path).is_relative_to(writer):
            return writer
    return None


def _between(outer: str, inner: str) -> list[str]:
    """The folders strictly between `outer` and `inner`."""
    found = []
    folder = Path(inner).parent
    while folder != Path(outer) and folder.is_relative_to(outer):
        found.append(str(folder))
        folder = folder.parent
    return found


def _outermost(paths: Iterable[str]) -> list[str]:
    """The paths, less those inside another of them."""
    unique = list(dict.fromkeys(paths))
    return [path for path in unique if not any(other != path and _inside(path, other) for other in unique)]


def _inside(path: str, folder: str) -> bool:
    return Path(path).is_relative_to(folder)


def _inside_any(path: str, folders: Iterable[str]) -> bool:
    return any(_inside(path, folder) for folder in folders)


def _is_system(path: str) -> bool:
    return any(_inside(path, folder) for folder in SYSTEM if os.path.isdir(folder))
