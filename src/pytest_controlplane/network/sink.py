"""The sink: the one process that holds a world's namespaces (started by `unshare`, it lives as long as the world)
and answers everything sent inside them.  Run as `python -m pytest_controlplane.network.sink CONFIG_JSON`.

It confines the namespace (`inside.confine`), makes the world CA, opens its sockets, prints `ready` on stdout and
serves until its stdin closes (the host closed it, or died).  What it serves:

    [::]:1    TCP   every connection to a non-loopback address (nftables redirect), by what it speaks:
                    TLS -> terminated with a certificate for its SNI name, then served again (HTTP inside);
                    HTTP -> recorded and answered 200 "ok" (CONNECT: recorded, tunnel opened, served again);
                    port 53 -> DNS over TCP; anything else -> its bytes recorded after EOF or idle, no answer
    [::]:1    UDP   every datagram to a non-loopback address but port 53 (nftables tproxy): recorded
    *:53      UDP/TCP  DNS, whatever the address (every address is local): recorded, A -> the sink address
    127.0.0.1:PORT and [::1]:PORT  the bridges: piped to their unix sockets, never recorded
"""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import socket
import struct
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from . import dns, inside
from .bridge import connect_unix, pipe
from .egress import EgressLog, body_fields
from .handlers import Target, TcpHandler

IP_TRANSPARENT, IP_RECVORIGDSTADDR, IP_ORIGDSTADDR = 19, 20, 20
IPV6_TRANSPARENT, IPV6_RECVORIGDSTADDR, IPV6_ORIGDSTADDR = 75, 74, 74
IP_PKTINFO, IPV6_RECVPKTINFO, IPV6_PKTINFO = 8, 49, 50


class Sink:
    def __init__(self, config: dict[str, Any], facts: dict[str, Any]) -> None:
        from .tls import Authority

        directory = Path(config["directory"])
        self.address = config["sink_address"]
        self.ipv6 = bool(facts["ipv6"])
        self.log = EgressLog(directory / "egress.jsonl")
        self.authority = Authority(directory, label=hashlib.sha256(bytes(directory)).hexdigest()[:12])
        self.tcp = TcpHandler(self.log, self.authority, self.address, float(config["idle_timeout"]))
        self.bridges = {int(port): path for port, path in config["bridges"].items()}
        self.selector = selectors.DefaultSelector()
        self._open()

    def _open(self) -> None:
        family6 = socket.AF_INET6 if self.ipv6 else socket.AF_INET
        anywhere = "::" if self.ipv6 else "0.0.0.0"
        self._listen(_tcp(family6, anywhere, inside.SINK_PORT), self._accept_sink)
        self._listen(_tcp(socket.AF_INET, "0.0.0.0", inside.DNS_PORT), self._accept_dns)
        self._listen(_udp(socket.AF_INET, "0.0.0.0", inside.DNS_PORT, [(socket.SOL_IP, IP_PKTINFO)]), self._dns)
        catch_all = [(socket.SOL_IP, IP_TRANSPARENT), (socket.SOL_IP, IP_RECVORIGDSTADDR)]
        if self.ipv6:
            self._listen(_tcp(socket.AF_INET6, "::", inside.DNS_PORT, v6only=True), self._accept_dns)
            self._listen(
                # transparent: an answer from a resolver address that is not local (2001:db8::7) is EINVAL without
                _udp(
                    socket.AF_INET6,
                    "::",
                    inside.DNS_PORT,
                    [(socket.IPPROTO_IPV6, IPV6_RECVPKTINFO), (socket.IPPROTO_IPV6, IPV6_TRANSPARENT)],
                    v6only=True,
                ),
                self._dns,
            )
            catch_all += [(socket.IPPROTO_IPV6, IPV6_TRANSPARENT), (socket.IPPROTO_IPV6, IPV6_RECVORIGDSTADDR)]
        self._listen(_udp(family6, anywhere, inside.SINK_PORT, catch_all), self._datagram)
        for port, path in self.bridges.items():
            self._listen(_tcp(socket.AF_INET, "127.0.0.1", port), self._accept_bridge(path))
            if self.ipv6:
                self._listen(_tcp(socket.AF_INET6, "::1", port, v6only=True), self._accept_bridge(path))

    def _listen(self, sock: socket.socket, callback: Any) -> None:
        self.selector.register(sock, selectors.EVENT_READ, callback)

    def serve_forever(self) -> None:
        while True:
            for key, _ in self.selector.select():
                try:
                    key.data(key.fileobj)
                except Exception:
                    traceback.print_exc()

    def _accept_sink(self, listener: socket.socket) -> None:
        client, _ = listener.accept()
        _thread(self.tcp.handle, client, _original_destination(client))

    def _accept_dns(self, listener: socket.socket) -> None:
        client, _ = listener.accept()
        address, port = client.getsockname()[:2]
        _thread(self.tcp.handle, client, Target(_unmapped(address), port))

    def _accept_bridge(self, path: str) -> Any:
        def accept(listener: socket.socket) -> None:
            client, _ = listener.accept()
            _thread(self._bridge, client, path)

        return accept

    def _bridge(self, client: socket.socket, path: str) -> None:
        try:
            upstream = connect_unix(path)
        except OSError as error:
            print(f"bridge to {path}: {error}", file=sys.stderr)
            client.close()
            return
        pipe(client, upstream)

    def _dns(self, sock: socket.socket) -> None:
        data, ancillary, _, peer = sock.recvmsg(65535, 256)
        address, info = _pktinfo(ancillary, sock.family)
        query = dns.parse_query(data)
        if query is None:
            self.log.write("udp", host=None, address=address, port=inside.DNS_PORT, **body_fields(data),
                           bytes_out=len(data))  # fmt: skip
            return
        self.log.write("dns", host=query.name, address=address, port=inside.DNS_PORT, method=query.type_name,
                       bytes_out=len(data))  # fmt: skip
        sock.sendmsg([dns.answer(query, self.address)], info, 0, peer)

    def _datagram(self, sock: socket.socket) -> None:
        data, ancillary, _, _peer = sock.recvmsg(65535, 256)
        address, port = "", 0
        for level, kind, payload in ancillary:
            if (level, kind) == (socket.SOL_IP, IP_ORIGDSTADDR):
                port, address = struct.unpack("!H", payload[2:4])[0], socket.inet_ntoa(payload[4:8])
            elif (level, kind) == (socket.IPPROTO_IPV6, IPV6_ORIGDSTADDR):
                port = struct.unpack("!H", payload[2:4])[0]
                address = socket.inet_ntop(socket.AF_INET6, payload[8:24])
        self.log.write("udp", host=None, address=address, port=port, **body_fields(data), bytes_out=len(data))


def _tcp(family: int, host: str, port: int, *, v6only: bool = False) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1 if v6only else 0)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def _udp(family: int, host: str, port: int, options: list[tuple[int, int]], *, v6only: bool = False) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_DGRAM)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1 if v6only else 0)
    for level, option in options:
        sock.setsockopt(level, option, 1)
    sock.bind((host, port))
    return sock


def _thread(target: Any, *args: Any) -> None:
    threading.Thread(target=target, args=args, daemon=True).start()


def _unmapped(address: str) -> str:
    return address.removeprefix("::ffff:") if address.startswith("::ffff:") and "." in address else address


def _original_destination(client: socket.socket) -> Target:
    """Where the client meant to connect before nftables sent it here (SO_ORIGINAL_DST, 80 in both families)."""
    try:
        raw = client.getsockopt(socket.SOL_IP, 80, 16)
        return Target(socket.inet_ntoa(raw[4:8]), struct.unpack("!H", raw[2:4])[0])
    except OSError:
        pass
    try:
        raw = client.getsockopt(socket.IPPROTO_IPV6, 80, 28)
        return Target(socket.inet_ntop(socket.AF_INET6, raw[8:24]), struct.unpack("!H", raw[2:4])[0])
    except OSError:
        address, port = client.getsockname()[:2]
        return Target(_unmapped(address), port)


def _pktinfo(ancillary: list[tuple[int, int, bytes]], family: int) -> tuple[str, list[tuple[int, int, bytes]]]:
    """The address a datagram was sent to, and the ancillary data that makes the answer come from it."""
    for level, kind, payload in ancillary:
        if (level, kind) == (socket.SOL_IP, IP_PKTINFO):
            destination = payload[8:12]
            return socket.inet_ntoa(destination), [(level, kind, b"\0" * 4 + destination + b"\0" * 4)]
        if (level, kind) == (socket.IPPROTO_IPV6, IPV6_PKTINFO):
            return socket.inet_ntop(socket.AF_INET6, payload[:16]), [(level, kind, payload[:16] + b"\0" * 4)]
    return "", []


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    try:
        facts = inside.confine(config)
        sink = Sink(config, facts)
    except (inside.SetupError, OSError) as error:
        print(f"error {error}", flush=True)
        return 1
    print("ready " + json.dumps(facts), flush=True)
    threading.Thread(target=_exit_with_stdin, daemon=True).start()
    sink.serve_forever()
    return 0


def _exit_with_stdin() -> None:
    """The host holds our stdin open for the world's lifetime: EOF means it closed the world, or died."""
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
