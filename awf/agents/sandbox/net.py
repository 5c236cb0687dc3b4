"""Outside a sandbox, what its agent may reach: a gateway that carries the connections its programs
make to where the profile allows, while the attempt runs.

A sandboxed agent has no network but its own loopback. Its first process (init.py)
listens there on the ports the agent is told about, and hands each connection, as a descriptor,
over a channel to this gateway, tagged with the route it came in on:

- a forward, for a model on loopback (the agent's 127.0.0.1:PORT is the machine's 127.0.0.1:PORT,
  and no other port of the machine's loopback), and
- a proxy (HTTP CONNECT, as HTTPS_PROXY names it), which opens a connection only to a host:port
  on the allowlist: the model's API and the profile's `network`. Everything else gets 403.

The gateway listens on an abstract unix socket with a random name: no file anywhere, nothing left
behind when awf is killed, and invisible inside a sandbox, which has a network namespace (and so
an abstract namespace) of its own. A channel is taken only from a process of awf's own user;
launch.py connects it before the sandbox is made.
"""

from __future__ import annotations

import os
import secrets
import socket
import struct
import threading
from dataclasses import dataclass

HEAD_LIMIT = 8192
CONNECT_TIMEOUT = 30.0
CHUNK = 65536


@dataclass(frozen=True)
class Route:
    """Where the connections of one listening address inside go: host:port, or the proxy (host None)."""

    host: str | None
    port: int
    allowed: frozenset[str] = frozenset()  # for the proxy: host:port it lets through


class Gateway:
    """One sandboxed agent's way out: its routes, and the threads that carry them."""

    def __init__(self, routes: list[Route]) -> None:
        self.routes = routes
        self.name: str = f"awf-gateway-{secrets.token_hex(16)}"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind("\0" + self.name)
        self._listener.listen(64)
        threading.Thread(target=self._accept, daemon=True, name="awf-gateway").start()

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                channel, _ = self._listener.accept()
            except OSError:
                return  # closed: the attempt is over
            if _peer_uid(channel) != os.geteuid():
                channel.close()
                continue
            threading.Thread(target=self._serve, args=(channel,), daemon=True).start()

    def _serve(self, channel: socket.socket) -> None:
        """Take each connection the sandbox hands over, one byte (its route) and one descriptor at a time."""
        with channel:
            while True:
                try:
                    data, fds, _, _ = socket.recv_fds(channel, 1, 1)
                except OSError:
                    return
                if not data:
                    for fd in fds:
                        os.close(fd)
                    return  # the sandbox has ended
                if not fds:
                    continue
                client = socket.socket(fileno=fds[0])
                if data[0] >= len(self.routes):
                    client.close()
                    continue
                threading.Thread(target=_carry, args=(client, self.routes[data[0]]), daemon=True).start()


def _carry(client: socket.socket, route: Route) -> None:
    if route.host is None:
        _connect(client, route.allowed)
    else:
        _forward(client, route.host, route.port)


def _peer_uid(channel: socket.socket) -> int | None:
    try:
        said = channel.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", said)
    except OSError:
        return None
    return int(uid)


def _forward(client: socket.socket, host: str, port: int) -> None:
    try:
        upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
    except OSError:
        client.close()
        return
    upstream.settimeout(None)
    join(client, upstream)


def _connect(client: socket.socket, allowed: frozenset[str]) -> None:
    head = b""
    try:
        while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
            data = client.recv(HEAD_LIMIT)
            if not data:
                break
            head += data
    except OSError:
        client.close()
        return
    words = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    target = words[1].lower() if len(words) == 3 and words[0] == "CONNECT" else ""
    if not target or target not in allowed:
        why = "only CONNECT is served here" if not target else f"{target} is not in the sandbox's network allowlist"
        _reply(client, "403 Forbidden", why)
        client.close()
        return
    host, _, port = target.rpartition(":")
    try:
        upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT)
    except OSError as error:
        _reply(client, "502 Bad Gateway", f"{target} cannot be reached: {error}")
        client.close()
        return
    upstream.settimeout(None)
    rest = head.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in head else b""
    try:
        client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        if rest:
            upstream.sendall(rest)
    except OSError:
        client.close()
        upstream.close()
        return
    join(client, upstream)


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


def _reply(client: socket.socket, status: str, why: str) -> None:
    body = f"awf sandbox: {why}\n".encode()
    try:
        client.sendall(
            f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + body
        )
    except OSError:
        pass
