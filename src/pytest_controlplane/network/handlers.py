"""What the sink does with one TCP connection: find out what the client speaks from its first bytes, answer as a
server of that would (TLS terminated with the world CA, HTTP answered 200, CONNECT tunnelled, DNS over TCP answered),
and record it before answering.  Streams nest (TLS in a CONNECT tunnel in TLS), up to a few layers."""

from __future__ import annotations

import dataclasses
import socket
import ssl
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from . import dns
from .egress import BODY_LIMIT, EgressLog, body_fields
from .http_request import TUNNEL, answer, looks_like_http, read_request
from .streams import Stream, StreamClosed, TlsStream

MAX_LAYERS = 4  # TLS, CONNECT, TLS, ...: deeper than any real client goes


@dataclass(frozen=True)
class Target:
    """Where the client meant its bytes to go, as far as is known so far."""

    address: str
    port: int
    host: str | None = None
    via: str | None = None
    tls: bool = False


class TcpHandler:
    def __init__(self, log: EgressLog, authority: Any, sink_address: str, idle_timeout: float) -> None:
        self.log, self.authority, self.sink_address, self.idle = log, authority, sink_address, idle_timeout

    def handle(self, sock: socket.socket, target: Target) -> None:
        sock.settimeout(self.idle)
        try:
            self.serve(Stream(sock), target, 0)
        except OSError:
            pass  # the client went away mid-answer: what it sent is recorded already
        except Exception:
            traceback.print_exc(file=sys.stderr)
        finally:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def serve(self, stream: Stream, target: Target, layer: int) -> None:
        if target.port == 53 and layer == 0:
            return self.dns(stream, target)
        first = stream.peek(3)
        if first[:1] == b"\x16" and first[1:2] == b"\x03" and layer < MAX_LAYERS:
            return self.tls(stream, target, layer)
        if first and looks_like_http(stream.peek(16)):
            return self.http(stream, target, layer)
        return self.raw(stream, target)

    def record(self, kind: str, target: Target, **fields: Any) -> None:
        self.log.write(kind, host=target.host, address=target.address, port=target.port, via=target.via, **fields)

    def raw(self, stream: Stream, target: Target) -> None:
        """Neither TLS nor HTTP (or nothing at all): keep what the client sends until it closes or falls idle."""
        start = stream.received - len(stream.buffer)
        body = stream.drain(BODY_LIMIT)
        if target.tls:
            target = dataclasses.replace(target, via=f"{target.via}, tls" if target.via else "tls")
        self.record("tcp", target, **body_fields(body), bytes_out=stream.received - start)

    def tls(self, stream: Stream, target: Target, layer: int) -> None:
        tls = TlsStream(stream, self.authority.context_for(target.host or target.address))
        try:
            tls.handshake()
        except (ssl.SSLError, StreamClosed) as error:
            named = dataclasses.replace(target, host=tls.server_name or target.host)
            self.record("https", named, bytes_out=stream.received, error=f"TLS handshake failed: {error}")
            return
        self.serve(tls, dataclasses.replace(target, host=tls.server_name or target.host, tls=True), layer + 1)

    def http(self, stream: Stream, target: Target, layer: int) -> None:
        try:
            request = read_request(stream)
        except (StreamClosed, ValueError):
            return self.raw(stream, target)
        host, port, path = request.where()
        kind = "https" if target.tls else "http"
        fields = {"method": request.method, "path": path, "headers": request.headers, **body_fields(request.body),
                  "bytes_out": request.size}  # fmt: skip
        if request.method == "CONNECT":
            named = dataclasses.replace(
                target, host=host, port=port or 443, via=f"proxy {target.address}:{target.port}"
            )
            self.record(kind, named, **fields)
            stream.send(TUNNEL)
            return self.serve(stream, dataclasses.replace(named, tls=False), layer + 1)
        if "://" in request.target:  # an absolute-form request: the client takes us for its proxy
            target = dataclasses.replace(target, host=host, port=port or target.port,
                                         via=f"proxy {target.address}:{target.port}")  # fmt: skip
        elif not (target.tls and target.host):  # SNI first, then the Host header
            target = dataclasses.replace(target, host=host or target.host)
        self.record(kind, target, **fields)
        stream.send(answer(target.host, path, request.method))

    def dns(self, stream: Stream, target: Target) -> None:
        """DNS over TCP: length-prefixed queries, as many as the client sends (a connection that sends none is
        recorded as "tcp": connecting was egress too)."""
        answered = False
        while True:
            try:
                length = int.from_bytes(stream.read_exact(2), "big")
                message = stream.read_exact(length)
            except StreamClosed:
                if not answered:
                    self.record("tcp", target, **body_fields(stream.buffer), bytes_out=stream.received)
                return
            query = dns.parse_query(message)
            if query is None:
                self.record("tcp", target, **body_fields(message), bytes_out=length + 2)
                return
            self.record("dns", dataclasses.replace(target, host=query.name), method=query.type_name,
                        bytes_out=length + 2)  # fmt: skip
            reply = dns.answer(query, self.sink_address)
            stream.send(len(reply).to_bytes(2, "big") + reply)
            answered = True
