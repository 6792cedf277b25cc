"""Bridges between a world and the host, over unix sockets (a path on the shared filesystem crosses the network
namespace; no address does): inside, 127.0.0.1:PORT forwards to a unix socket; on the host, `serve_unix_to_tcp`
forwards that unix socket to a loopback TCP port (the model gateway's).  Nothing else of the host is reachable.

A unix socket's path is at most 107 bytes, less than a pytest tmp_path can be: both ends go through
/proc/self/fd/N/NAME, N an O_PATH descriptor of the socket's directory, which is short whatever the directory.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides are done, then close both."""

    def one_way(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    other = threading.Thread(target=one_way, args=(b, a), daemon=True)
    other.start()
    one_way(a, b)
    other.join()
    a.close()
    b.close()


def with_short_path(path: Path | str, use: Callable[[str], None]) -> None:
    """Call `use` with a name for the unix socket `path` that fits in sun_path, however long `path` is."""
    path = Path(path)
    if len(os.fsencode(path)) < 100:
        use(str(path))
        return
    directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        use(f"/proc/self/fd/{directory}/{path.name}")
    finally:
        os.close(directory)


def connect_unix(path: Path | str, timeout: float = 10.0) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with_short_path(path, sock.connect)
    except OSError:
        sock.close()
        raise
    sock.settimeout(None)
    return sock


class UnixBridge:
    """A host-side thread that accepts on a unix socket and pipes each connection to a loopback TCP port."""

    def __init__(self, unix_path: Path | str, host: str, port: int) -> None:
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"serve_unix_to_tcp forwards to loopback addresses only, not {host!r}")
        self.path, self.host, self.port = Path(unix_path), host, port
        self.path.unlink(missing_ok=True)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with_short_path(self.path, self._listener.bind)
        self._listener.listen(64)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name=f"unix-bridge-{port}", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._forward, args=(client,), daemon=True).start()

    def _forward(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection((self.host, self.port), timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        pipe(client, upstream)

    def close(self) -> None:
        self._closed.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        self._thread.join(timeout=5)
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> UnixBridge:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def serve_unix_to_tcp(unix_path: Path | str, host: str, port: int) -> UnixBridge:
    """Accept on the unix socket `unix_path` (made here, removed on close) and forward each connection to
    host:port, a loopback address; use it as a context manager or call `.close()`."""
    return UnixBridge(unix_path, host, port)
