"""Byte streams the sink reads a client through: a socket, or TLS over another stream (a CONNECT tunnel inside TLS
too), each able to give back what it read ahead, so the sink can look at the first bytes before deciding what the
client speaks and then hand every byte, those included, to the handler that speaks it."""

from __future__ import annotations

import socket
import ssl


class StreamClosed(Exception):
    """The peer closed, went idle past the timeout, or broke the connection."""


class Stream:
    """A client's byte stream with read-ahead.  `received` counts every byte the client sent on it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        self.received = 0

    def _recv(self, size: int) -> bytes:
        try:
            return self.sock.recv(size)
        except (TimeoutError, OSError):
            return b""

    def _send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def more(self) -> bool:
        """Read what the peer sends next into the buffer; False at EOF or idle timeout."""
        data = self._recv(65536)
        self.received += len(data)
        self.buffer += data
        return bool(data)

    def peek(self, size: int) -> bytes:
        """At least `size` bytes ahead if the peer sends them, without consuming them (fewer at EOF)."""
        while len(self.buffer) < size and self.more():
            pass
        return self.buffer[:size]

    def read(self, size: int) -> bytes:
        """Up to `size` bytes: what is buffered, else what arrives next (b"" at EOF)."""
        if not self.buffer and not self.more():
            return b""
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def read_exact(self, size: int) -> bytes:
        if self.peek(size) and len(self.buffer) >= size:
            data, self.buffer = self.buffer[:size], self.buffer[size:]
            return data
        raise StreamClosed(f"the peer closed before sending {size} bytes")

    def read_until(self, marker: bytes, limit: int) -> bytes:
        """Everything up to and including `marker`; StreamClosed at EOF or past `limit` bytes."""
        while marker not in self.buffer[:limit]:
            if len(self.buffer) >= limit or not self.more():
                raise StreamClosed(f"no {marker!r} within {len(self.buffer)} bytes")
        end = self.buffer.index(marker) + len(marker)
        data, self.buffer = self.buffer[:end], self.buffer[end:]
        return data

    def drain(self, limit: int) -> bytes:
        """Read until EOF or idle; keep the first `limit` bytes (all bytes are counted in `received`)."""
        kept = self.buffer[:limit]
        self.buffer = b""
        while True:
            data = self._recv(65536)
            if not data:
                return kept
            self.received += len(data)
            if len(kept) < limit:
                kept += data[: limit - len(kept)]

    def send(self, data: bytes) -> None:
        self._send(data)


class TlsStream(Stream):
    """TLS terminated over another stream, through memory BIOs: the bytes already read ahead are part of the
    handshake, and a tunnel inside a tunnel works the same way."""

    def __init__(self, inner: Stream, context: ssl.SSLContext) -> None:
        self.inner = inner
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=True)
        super().__init__(inner.sock)

    def handshake(self) -> None:
        """Complete the server side of the handshake; ssl.SSLError if the client gives up (e.g. distrusts the CA)."""
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush()
                if not self._feed():
                    raise StreamClosed("the client closed during the TLS handshake") from None
            except ssl.SSLError:
                self._flush()  # the alert tells the client why
                raise
        self._flush()

    @property
    def server_name(self) -> str | None:
        return getattr(self.tls, "sni", None)

    def _feed(self) -> bool:
        data = self.inner.read(65536)
        if not data:
            self.incoming.write_eof()
            return False
        self.incoming.write(data)
        return True

    def _flush(self) -> None:
        pending = self.outgoing.read()
        if pending:
            try:
                self.inner.send(pending)
            except OSError:
                pass

    def _recv(self, size: int) -> bytes:
        while True:
            try:
                return self.tls.read(size)
            except ssl.SSLWantReadError:
                self._flush()
                if not self._feed():
                    return b""
            except (ssl.SSLError, StreamClosed):
                return b""

    def _send(self, data: bytes) -> None:
        self.tls.write(data)
        self._flush()
