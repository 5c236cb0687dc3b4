"""An agent that spends its turn trying to get out of its sandbox, then answers what it managed.

argv: CONTEXT_JSON ESCAPE [ESCAPE ...]. CONTEXT_JSON names what is outside (a file to write, a
secret to read, another run's record, a unix socket, a loopback port, a process of the machine's).
Each escape's result is "held: why" when the sandbox stopped it, and anything else when it did not
(an "ok" for the few things an agent must be able to do, such as commit). The answer goes through
`awf answer`, as any agent's.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import termios
from collections.abc import Callable

LIBC = ctypes.CDLL(None, use_errno=True)
CONTEXT: dict[str, str] = json.loads(sys.argv[1])
MS_REMOUNT, MS_BIND = 32, 4096
MNT_DETACH = 2
CLONE_NEWUSER = 0x10000000
PTRACE_ATTACH = 16
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
SYS_IO_URING_SETUP = 425


def call(result: int) -> None:
    if result == -1:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))


def write(path: str, text: str = "written by the agent\n", mode: str = "a") -> None:
    with open(path, mode) as file:
        file.write(text)


def read(path: str) -> None:
    with open(path, "rb") as file:
        if not file.read():
            raise OSError(errno.ENODATA, "it reads as empty")


def capabilities() -> None:
    with open("/proc/self/status") as file:
        status = dict(line.split(":", 1) for line in file.read().splitlines() if ":" in line)
    held = {key: status[key].strip() for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb")}
    if any(int(value, 16) for value in held.values()) or status["NoNewPrivs"].strip() != "1":
        return  # it has some: the escape worked
    raise OSError(errno.EPERM, "no capabilities, no new privileges")


def remount(path: str) -> None:
    call(LIBC.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND, None))


def unmount(path: str) -> None:
    call(LIBC.umount2(path.encode(), MNT_DETACH))


def new_user_namespace() -> None:
    call(LIBC.unshare(CLONE_NEWUSER))


def unix_connect(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)


def datagram_pair() -> None:
    socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)


def tcp_connect(port: str) -> None:
    socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()


def raw_socket() -> None:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close()


def ptrace(pid: str) -> None:
    call(LIBC.ptrace(PTRACE_ATTACH, int(pid), None, None))


def see_process(pid: str) -> None:
    if not os.path.exists(f"/proc/{pid}"):
        raise OSError(errno.ESRCH, f"process {pid} is not in its /proc")
    os.kill(int(pid), signal.SIGSTOP)


def keyring() -> None:
    call(LIBC.syscall(SYS_KEYCTL, 0, -3, 0))  # KEYCTL_GET_KEYRING_ID of the session keyring


def io_uring() -> None:
    params = ctypes.create_string_buffer(120)
    call(LIBC.syscall(SYS_IO_URING_SETUP, 4, params))


def type_into_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSTI, b"x")


def rename(path: str) -> None:
    os.rename(path, path + ".moved")
    os.rename(path + ".moved", path)


def commit() -> None:
    write("by-agent.txt", "a change\n")
    who = ["-c", "user.name=agent", "-c", "user.email=agent@example.com"]
    for words in (["git", "add", "by-agent.txt"], ["git", *who, "commit", "-q", "-m", "by the agent"]):
        done = subprocess.run(words, capture_output=True, text=True)
        if done.returncode != 0:
            raise OSError(errno.EPERM, f"git: {done.stderr.strip()[-200:]}")


ESCAPES: dict[str, Callable[[], None]] = {
    "capabilities": capabilities,
    "remount /etc read-write": lambda: remount(CONTEXT["system"]),
    "remount awf's install read-write": lambda: remount(CONTEXT["install"]),
    "unmount what hides the records": lambda: unmount(CONTEXT["records_cover"]),
    "make a user namespace": new_user_namespace,
    "read another run's record": lambda: read(CONTEXT["other_run"]),
    "write its own run's record": lambda: write(CONTEXT["own_run"], "{}\n"),
    "write outside": lambda: write(CONTEXT["victim"]),
    "read the operator's secret": lambda: read(CONTEXT["secret"]),
    "read /etc/shadow": lambda: read("/etc/shadow"),
    "connect a unix socket outside": lambda: unix_connect(CONTEXT["socket"]),
    "a datagram socket pair": datagram_pair,
    "reach another loopback port": lambda: tcp_connect(CONTEXT["port"]),
    "a raw socket": raw_socket,
    "ptrace a process outside": lambda: ptrace(CONTEXT["pid"]),
    "stop a process outside": lambda: see_process(CONTEXT["pid"]),
    "the kernel keyrings": keyring,
    "io_uring": io_uring,
    "type into its terminal": type_into_terminal,
    "change the workflow": lambda: write(CONTEXT["workflow"], "\nopen('/tmp/owned', 'w')\n"),
    "change a module the workflow imports": lambda: write(CONTEXT["neighbour"], "\nopen('/tmp/owned', 'w')\n"),
    "move the workflow's folder away": lambda: rename(CONTEXT["workflow_dir"]),
    "add a git hook": lambda: write(CONTEXT["git"] + "/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/owned\n", "w"),
    "change git's config": lambda: write(CONTEXT["git"] + "/config", "[core]\n\tfsmonitor = touch /tmp/owned\n"),
    "change git's info": lambda: write(CONTEXT["git"] + "/info/attributes", "* filter=owned\n"),
    "move .git away": lambda: rename(CONTEXT["git"]),
    "move .awf away": lambda: rename(CONTEXT["awf_dir"]),
    "commit": commit,
}


def attempt(name: str) -> str:
    try:
        ESCAPES[name]()
    except OSError as error:
        return f"held: {error.strerror or error}"
    except Exception as error:  # an escape that broke otherwise still did not get out
        return f"held: {type(error).__name__}: {error}"
    return "ok"


def main() -> int:
    sys.stdin.read()  # the prompt
    results = {name: attempt(name) for name in sys.argv[2:]}
    return subprocess.run(["awf", "answer", json.dumps(results)]).returncode


if __name__ == "__main__":
    sys.exit(main())
