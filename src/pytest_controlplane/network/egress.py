"""What the world network records: one `Egress` per DNS query, HTTP request, TCP connection or UDP datagram that a
process inside the world sent, as one JSON line of the sink's log.

The sink (inside the namespace) appends with `EgressLog`; the host reads with `read_log`.  A line is written and
flushed before the sink answers, so once a client has its answer its record is in the file; what gets no answer
(raw TCP, UDP) is written when the peer closes or falls idle, and so is a TLS handshake the client broke off
(it distrusted the certificate: it gave up before the sink knew); `WorldNetwork.wait_for` waits for those.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bodies import View, views

KINDS = ("dns", "http", "https", "tcp", "udp")
BODY_LIMIT = 64 * 1024  # characters of a body kept in a record; the rest is counted in bytes_out, not stored


@dataclass(frozen=True)
class Egress:
    """One thing that tried to leave the world.

    kind       "dns" (a query), "http" / "https" (a request, TLS terminated), "tcp" (a connection that spoke neither,
               its bytes in `body`), "udp" (a datagram to a port other than 53, or one that is not DNS)
    host       the DNS name asked, the TLS SNI name, or the HTTP Host (for CONNECT: the target); None when unknown
    address    the address the client sent to (the original destination, before the redirect to the sink)
    port       its port (for a request through a CONNECT tunnel or a proxy: the target's port)
    method     the HTTP method; for "dns" the query type ("A", "AAAA", "TXT", ...)
    path       the request target's path and query ("/x?y=1"); for CONNECT "host:port"
    headers    the request headers as sent, in order
    body       the request body or the bytes received, as text (undecodable bytes as \\xNN), at most 64 KiB
    body_base64  the same bytes, losslessly, when they are not UTF-8 (a gzip body, a binary datagram); else None
    bytes_out  how many bytes the client sent (headers and body, or the datagram / stream), counting what was cut
    time       when it was recorded (time.time())
    via        how it arrived when not directly: "proxy 198.18.0.1:3128" (a CONNECT tunnel or an absolute-form
               request), "tls" (a non-HTTP stream inside TLS)
    error      what went wrong, e.g. the TLS handshake failed because the client does not trust the world CA
    """

    kind: str
    host: str | None
    address: str
    port: int
    method: str | None = None
    path: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: str = ""
    bytes_out: int = 0
    time: float = 0.0
    via: str | None = None
    error: str | None = None
    body_base64: str | None = None

    def header(self, name: str) -> str | None:
        """The first header of that name (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)

    @property
    def url(self) -> str | None:
        """scheme://host:port/path for an HTTP(S) request, else None."""
        if self.kind not in ("http", "https") or self.method == "CONNECT":
            return None
        host = self.host or self.address
        if ":" in host:
            host = f"[{host}]"
        return f"{self.kind}://{host}:{self.port}{self.path or '/'}"

    @property
    def raw_body(self) -> bytes:
        """The body's bytes as sent (compressed, when it was: views() inflates it).
        A record written before `body_base64` existed gives its text's UTF-8: its \\xNN stay as they were."""
        if self.body_base64:
            try:
                return base64.b64decode(self.body_base64)
            except (binascii.Error, ValueError):
                pass
        return self.body.encode("utf-8", "surrogatepass")

    def views(self) -> list[View]:
        """The views of the body a scan reads (bodies.py): as sent first, then inflated, each multipart part, ..."""
        return views(self.raw_body, self.headers) if self.body or self.body_base64 else []

    def head(self) -> str:
        """What the client sent besides a body: host, path and headers, as one text."""
        headers = "\n".join(f"{key}: {value}" for key, value in self.headers)
        return "\n".join(part for part in (self.host or "", self.path or "", headers) if part)

    def text(self) -> str:
        """Everything the client chose to send, as one text (host, path, headers, body, and each decoded view of the
        body that is not already in it: inflated, a multipart part decoded): what a canary scan reads."""
        raw = self.raw_body
        decoded = [as_text(view.data) for view in self.views()[1:] if view.data and view.data not in raw]
        return "\n".join(part for part in (self.head(), self.body, *decoded) if part)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Egress:
        return cls(
            kind=str(data["kind"]),
            host=data.get("host"),
            address=str(data.get("address", "")),
            port=int(data.get("port", 0)),
            method=data.get("method"),
            path=data.get("path"),
            headers=tuple((str(k), str(v)) for k, v in data.get("headers") or ()),
            body=str(data.get("body") or ""),
            bytes_out=int(data.get("bytes_out", 0)),
            time=float(data.get("time", 0.0)),
            via=data.get("via"),
            error=data.get("error"),
            body_base64=data.get("body_base64"),
        )


def as_text(data: bytes, limit: int = BODY_LIMIT) -> str:
    """Bytes as text for a record: UTF-8 where it decodes, \\xNN where it does not, cut at `limit` characters."""
    return data[: limit * 4].decode("utf-8", "backslashreplace")[:limit]


def body_fields(data: bytes, limit: int = BODY_LIMIT) -> dict[str, str]:
    """A body's fields for a record: `body` as text, and `body_base64` when its bytes (the first `limit`) are not
    UTF-8, so that what text loses (a gzip stream) can be read back whole."""
    kept = data[:limit]
    try:
        codecs.getincrementaldecoder("utf-8")().decode(kept, final=False)  # a character cut at the limit is fine
    except UnicodeDecodeError:
        return {"body": as_text(data, limit), "body_base64": base64.b64encode(kept).decode("ascii")}
    return {"body": as_text(data, limit)}


def read_log(path: Path) -> list[Egress]:
    """The records of a sink's log, oldest first; a line still being written (no newline yet) is left for later."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    complete = raw[: raw.rfind(b"\n") + 1]
    return [Egress.from_json(json.loads(line)) for line in complete.splitlines() if line.strip()]


class EgressLog:
    """The sink's side: append one record per line, each in a single write, flushed before the client is answered."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, kind: str, *, host: str | None, address: str, port: int, **fields: Any) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown egress kind {kind!r}")
        record = {"kind": kind, "host": host, "address": address, "port": port, **fields, "time": time.time()}
        line = (json.dumps(record) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
