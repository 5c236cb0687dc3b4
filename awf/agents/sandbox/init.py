"""Inside a sandbox, its first process: the kernel's limits, the way out, then the agent's program.

    python -I -S init.py [--nproc N] [--nofile N] [--set NAME=VALUE | --unset NAME]
                                 [--channel FD --listen ADDRESS=TAG ...] -- COMMAND ...

A sandbox has a network of its own with nothing but loopback on it. Each `ADDRESS=TAG` listens on
ADDRESS inside; each connection to it is handed, as a descriptor, over the channel (a unix socket
awf connected before the sandbox was made, launch.py) with the byte TAG, and awf's gateway
outside carries it on (net.py): to the model's port, or to a proxy that lets through only
the hosts the profile allows. Nothing inside makes a unix socket (seccomp.py), so the channel is
the one way out, and only this process holds it: COMMAND starts without it. Then it runs COMMAND,
and exits as it does. Standard library only, and run with -I -S: it starts before every process of
a sandboxed agent, from awf's own install.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import threading


def _limit(kind: int, value: int) -> None:
    """Lower a limit for this process and what it starts (never raise one the machine set lower)."""
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def _listen(address: str) -> socket.socket:
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, int(port)))
    listener.listen(64)
    return listener


def _hand_over(listener: socket.socket, channel: socket.socket, tag: int, lock: threading.Lock) -> None:
    """Each connection to `listener`, passed to awf's gateway with its tag, then let go of here."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        try:
            with lock:
                socket.send_fds(channel, [bytes([tag])], [client.fileno()])
        except OSError:
            return  # awf's gateway is gone: nothing more gets out
        finally:
            client.close()


def main(argv: list[str]) -> int:
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    channel: socket.socket | None = None
    listens: list[tuple[str, int]] = []
    words = iter(options)
    for word in words:
        value = next(words)
        if word == "--nproc":
            _limit(resource.RLIMIT_NPROC, int(value))
        elif word == "--nofile":
            _limit(resource.RLIMIT_NOFILE, int(value))
        elif word == "--channel":
            channel = socket.socket(fileno=int(value))
            channel.set_inheritable(False)
        elif word == "--set":  # the environment awf gave: Python's start-up sets LC_CTYPE in a C locale
            name, _, given = value.partition("=")
            os.environ[name] = given
        elif word == "--unset":
            os.environ.pop(value, None)
        elif word == "--listen":
            where, _, route = value.rpartition("=")
            listens.append((where, int(route)))
    lock = threading.Lock()
    for where, tag in listens:
        if channel is not None:
            threading.Thread(target=_hand_over, args=(_listen(where), channel, tag, lock), daemon=True).start()
    child = subprocess.Popen(command, close_fds=True)

    def forward(number: int, frame: object) -> None:
        child.send_signal(number)

    # Ctrl-C in a pane reaches the program; this process stays until the program has gone.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, forward)
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
