"""Outside a sandbox, what its agent may reach: unix sockets that awf serves while the attempt runs.

A sandboxed agent has no network but its own loopback. Inside, sandbox_relay.py listens on the
ports the agent is told about and carries each connection to one of these sockets:

- a forward, for a model on loopback (the agent's 127.0.0.1:PORT is the machine's 127.0.0.1:PORT,
  and no other port of the machine's loopback), and
- a proxy (HTTP CONNECT, as HTTPS_PROXY names it), which opens a connection only to a host:port
  on the allowlist: the model's API and the profile's `network`. Everything else gets 403.

The sockets live in a short folder of their own under the temp folder (a socket's path is at most
108 bytes), made at the agent's open and removed when the attempt ends.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from pathlib import Path

from .sandbox_relay import join

HEAD_LIMIT = 8192
CONNECT_TIMEOUT = 30.0


class Gateway:
    """One sandboxed agent's way out: its sockets, and the threads that serve them."""

    def __init__(self) -> None:
        self.dir: Path = Path(tempfile.mkdtemp(prefix="awf-net-"))
        self._listeners: list[socket.socket] = []

    def forward(self, name: str, host: str, port: int) -> Path:
        """A socket whose every connection goes on to host:port."""
        return self._serve(name, lambda client: self._forward(client, host, port))

    def proxy(self, name: str, allowed: set[str]) -> Path:
        """A socket that takes `CONNECT host:port` and lets through only what `allowed` holds."""
        return self._serve(name, lambda client: self._connect(client, allowed))

    def close(self) -> None:
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _serve(self, name: str, handle: object) -> Path:
        path = self.dir / f"{name}.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(64)
        self._listeners.append(listener)

        def accept() -> None:
            while True:
                try:
                    client, _ = listener.accept()
                except OSError:
                    return  # closed: the attempt is over
                threading.Thread(target=handle, args=(client,), daemon=True).start()  # type: ignore[arg-type]

        threading.Thread(target=accept, daemon=True, name=f"awf-gateway-{name}").start()
        return path

    @staticmethod
    def _forward(client: socket.socket, host: str, port: int) -> None:
        try:
            upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        join(client, upstream)

    @staticmethod
    def _connect(client: socket.socket, allowed: set[str]) -> None:
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
