"""HTTP/1.x requests as the sink reads them: request line, headers, and the body by Content-Length or chunked, kept as
sent (network/bodies.py reads it inflated), bounded everywhere, so a client cannot make the sink hold much."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from .streams import Stream, StreamClosed

HEAD_LIMIT = 64 * 1024
BODY_READ_LIMIT = 16 * 1024 * 1024  # read (and count) this much of a body at most; keep BODY_LIMIT of it
KEEP = 64 * 1024
_METHOD = re.compile(rb"^[A-Z][A-Z_-]{2,15} ")
_LINE = re.compile(r"^([A-Z][A-Z_-]*) (\S+) HTTP/(1\.[01])$")

OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"
OK_BODY = b"ok\n"
TUNNEL = b"HTTP/1.1 200 Connection established\r\n\r\n"
# The Claude Code CLI asks this before each WebFetch of a new domain (CLI 2.1.332: it fetches only when the answer is
# JSON with `can_fetch: true`); the world answers as the service would for a domain on no blocklist, so that WebFetch
# is judged by where it sends, not stopped by a stand-in that does not know the question.
_DOMAIN_CHECK = ("api.anthropic.com", "/api/web/domain_info")
_CAN_FETCH = b'{"can_fetch": true}'


def answer(host: str | None, path: str | None, method: str) -> bytes:
    """What the sink answers an HTTP request: 200 "ok", or the CLI's WebFetch domain check its yes."""
    if (host, (path or "").split("?", 1)[0]) == _DOMAIN_CHECK:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(_CAN_FETCH)}\r\n"
        return (head + "Connection: close\r\n\r\n").encode() + (b"" if method == "HEAD" else _CAN_FETCH)
    return OK if method == "HEAD" else OK + OK_BODY


@dataclass(frozen=True)
class Request:
    method: str
    target: str  # as sent: "/p?q", "http://host/p" (to a proxy), "host:443" (CONNECT), "*"
    headers: tuple[tuple[str, str], ...]
    body: bytes  # at most KEEP bytes, decoded if the client compressed it
    size: int  # every byte of the request as sent, head and whole body

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    def where(self) -> tuple[str | None, int | None, str]:
        """(host, port, path) the request names: from an absolute target (a proxy request), CONNECT's authority,
        or the Host header; port None when not said."""
        if self.method == "CONNECT":
            host, port = split_authority(self.target)
            return host, port, self.target
        if "://" in self.target:
            parts = urlsplit(self.target)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), path
        host, port = split_authority(self.header("host") or "")
        return host, port, self.target


def split_authority(authority: str) -> tuple[str | None, int | None]:
    """ "host:port", "[::1]:443", "host" -> (host, port)."""
    if not authority:
        return None, None
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        return host, int(rest[1:]) if rest[1:].isdigit() else None
    host, colon, port = authority.rpartition(":")
    if colon and port.isdigit() and ":" not in host:
        return host, int(port)
    return authority, None


def looks_like_http(first: bytes) -> bool:
    """Whether a stream's first bytes are an HTTP/1.x request line's start ("GET ", "POST ", ...)."""
    return bool(_METHOD.match(first))


def read_request(stream: Stream) -> Request:
    """One request from the stream (StreamClosed if it is not a whole one)."""
    before = stream.received - len(stream.buffer)
    head = stream.read_until(b"\r\n\r\n", HEAD_LIMIT).decode("latin-1")
    line, *header_lines = head[:-4].split("\r\n")
    match = _LINE.match(line)
    if match is None:
        raise StreamClosed(f"not an HTTP/1.x request line: {line[:80]!r}")
    method, target, _version = match.groups()
    headers = tuple(
        (name.strip(), value.strip()) for name, sep, value in (h.partition(":") for h in header_lines) if sep
    )
    request = Request(method, target, headers, b"", 0)
    if (request.header("expect") or "").lower() == "100-continue":
        stream.send(b"HTTP/1.1 100 Continue\r\n\r\n")
    if "chunked" in (request.header("transfer-encoding") or "").lower():
        body = _chunked(stream)
    else:
        length = request.header("content-length") or "0"
        body = _sized(stream, int(length) if length.isdigit() else 0)
    size = stream.received - len(stream.buffer) - before
    return Request(method, target, headers, body[:KEEP], size)


def _sized(stream: Stream, length: int) -> bytes:
    kept, left = b"", min(length, BODY_READ_LIMIT)
    while left > 0:
        data = stream.read(min(left, 65536))
        if not data:
            break
        left -= len(data)
        if len(kept) < KEEP:
            kept += data[: KEEP - len(kept)]
    return kept


def _chunked(stream: Stream) -> bytes:
    kept, total = b"", 0
    while total <= BODY_READ_LIMIT:
        size_line = stream.read_until(b"\r\n", 1024).split(b";", 1)[0].strip()
        size = int(size_line or b"0", 16)
        if size == 0:
            while stream.read_until(b"\r\n", HEAD_LIMIT) != b"\r\n":  # trailers, up to the blank line
                pass
            break
        chunk = stream.read_exact(size)
        stream.read_exact(2)
        total += size
        if len(kept) < KEEP:
            kept += chunk[: KEEP - len(kept)]
    return kept
