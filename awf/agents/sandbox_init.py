"""Inside a sandbox, the way out: TCP ports on the sandbox's own loopback that lead to unix sockets.

    python -I -S sandbox_relay.py 127.0.0.1:8080=/run/awf-net/0.sock ... -- COMMAND ...

A sandbox has a network of its own with nothing but loopback on it. Each `ADDRESS=SOCKET` listens
on ADDRESS inside and carries every connection to SOCKET, which awf binds into the sandbox and
serves outside (sandbox_net.py): to the model's port, or to a proxy that lets through only the
hosts the profile allows. Then it runs COMMAND, and exits as it does. Standard library only, and
run with -S: it starts before every process of a sandboxed agent.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading

CHUNK = 65536


def join(one: socket.socket, other: socket.socket) -> None:
    """Carry bytes both ways between two connected sockets until both sides are done, then close them."""
    left = [2]
    lock = threading.Lock()

    def carry(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(CHUNK):
                sink.sendall(data)
        except OSError:
            pass
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        with lock:
            left[0] -= 1
            done = left[0] == 0
        if done:
            one.close()
            other.close()

    threading.Thread(target=carry, args=(one, other), daemon=True).start()
    threading.Thread(target=carry, args=(other, one), daemon=True).start()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        join(client, upstream)


def _listen(address: str) -> socket.socket:
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, int(port)))
    listener.listen(64)
    return listener


def main(argv: list[str]) -> int:
    split = argv.index("--")
    for pair in argv[:split]:
        address, _, path = pair.partition("=")
        threading.Thread(target=_serve, args=(_listen(address), path), daemon=True).start()
    child = subprocess.Popen(argv[split + 1 :])

    def forward(number: int, frame: object) -> None:
        child.send_signal(number)

    # Ctrl-C in a pane reaches the program; the relay stays until the program has gone.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, forward)
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
