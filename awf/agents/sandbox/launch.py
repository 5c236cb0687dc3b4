"""Outside a sandbox, the step before it: open what must not be reached through a link, connect the
way out, load the filter, and become bubblewrap.

    python -I -S launch.py SPEC_JSON

SPEC_JSON says (sandbox.py writes it):

    {"bwrap": "/usr/bin/bwrap", "head": [...], "mounts": [[KIND, PATH, GUARD, SIZE], ...],
     "tail": [...], "seccomp": "HEX", "gateway": "NAME" or null, "init": [...], "command": [...]}

A mount whose GUARD is a folder lies inside a folder an agent may write: its PATH is opened here,
each step below GUARD without following a link (O_PATH, O_NOFOLLOW), and bubblewrap mounts that
descriptor (--bind-fd), so a link an agent put in its place, even a moment ago, is refused and
nothing outside is mounted through it. The gateway is awf's abstract unix socket (net.py):
connected here, where unix sockets may be made, and handed to the sandbox's first process as
`--channel FD`. The seccomp filter (seccomp.py) goes to bubblewrap through a pipe. Standard library
only, run with -I -S from awf's own install, by awf headless and by a pane's launcher alike.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys

REFUSED = 126  # the exit code of a sandbox that could not be made


def _open_guarded(guard: str, path: str) -> int:
    """`path` as an O_PATH descriptor: `guard` itself as any path is, each step below it never through a link."""
    fd = os.open(guard, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    rest = os.path.relpath(path, guard)
    parts = [] if rest == "." else rest.split(os.sep)
    try:
        for part in parts:
            if part in ("", ".", ".."):
                raise OSError(f"{path} is not a plain path below {guard}")
            child = os.open(part, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = child
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise OSError(
                    f"{path} is a symbolic link where a file or folder was, inside a folder agents write "
                    "(an agent may have put it there): the sandbox is not made through it"
                )
    except BaseException:
        os.close(fd)
        raise
    os.set_inheritable(fd, True)
    return fd


def _mount(kind: str, path: str, guard: str | None, size: int | None) -> list[str]:
    if kind in ("ro", "ro-try", "rw") and guard is not None:
        try:
            fd = _open_guarded(guard, path)
        except FileNotFoundError:
            if kind == "ro-try":
                return []
            raise
        return ["--bind-fd" if kind == "rw" else "--ro-bind-fd", str(fd), path]
    if kind == "link":
        return ["--symlink", str(guard), path]
    if kind in ("dev", "proc"):
        return [f"--{kind}", path]
    if kind == "ro":
        return ["--ro-bind", path, path]
    if kind == "ro-try":
        return ["--ro-bind-try", path, path]
    if kind == "rw":
        return ["--bind", path, path]
    if kind == "hide":  # a file of the system's that holds a secret: an empty one in its place
        return ["--ro-bind", os.devnull, path]
    if kind == "tmpfs":
        return [*(["--size", str(size)] if size else []), "--tmpfs", path]
    if kind == "empty":  # an empty, read-only folder in its place, made if it is not there
        return ["--tmpfs", path, "--remount-ro", path]
    raise ValueError(f"no such mount kind: {kind}")


def _gateway(name: str) -> int:
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    channel.connect("\0" + name)
    fd = channel.detach()
    os.set_inheritable(fd, True)
    return fd


def _filter(program: bytes) -> int:
    read, write = os.pipe()
    os.write(write, program)  # a few hundred bytes: well within a pipe's buffer
    os.close(write)
    os.set_inheritable(read, True)
    return read


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    try:
        args = [spec["bwrap"], *spec["head"]]
        for kind, path, guard, size in spec["mounts"]:
            args += _mount(kind, path, guard, size)
        args += [*spec["tail"], "--seccomp", str(_filter(bytes.fromhex(spec["seccomp"])))]
        init = list(spec["init"])
        if spec.get("gateway"):
            init += ["--channel", str(_gateway(spec["gateway"]))]
        os.execv(args[0], [*args, "--", *init, "--", *spec["command"]])
    except OSError as error:
        print(f"awf sandbox: {error}", file=sys.stderr)
    return REFUSED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
