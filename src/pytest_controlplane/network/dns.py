"""DNS as the sink answers it: every A query gets the sink's address, every other type an empty NOERROR answer (no
NXDOMAIN, so no resolver falls back to a search domain or another server), and every query name is recorded.

Measured here (glibc 2.36): `getaddrinfo` sends the A and AAAA queries of one lookup in parallel on one socket, so a
lookup is usually two records; with an empty AAAA answer clients connect over IPv4.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

TYPES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV", 64: "SVCB",
         65: "HTTPS", 255: "ANY"}  # fmt: skip
TTL = 60


@dataclass(frozen=True)
class Query:
    id: int
    flags: int
    name: str
    qtype: int
    question: bytes  # the question section as sent, echoed in the answer

    @property
    def type_name(self) -> str:
        return TYPES.get(self.qtype, f"TYPE{self.qtype}")


def parse_query(message: bytes) -> Query | None:
    """The first question of a DNS query, or None when the bytes are not one."""
    if len(message) < 12:
        return None
    ident, flags, qdcount = struct.unpack("!HHH", message[:6])
    if flags & 0x8000 or qdcount < 1:  # a response, or no question
        return None
    labels, offset = [], 12
    while True:
        if offset >= len(message):
            return None
        length = message[offset]
        offset += 1
        if length == 0:
            break
        if length > 63 or offset + length > len(message):  # compression in a question, or cut short
            return None
        labels.append(message[offset : offset + length].decode("ascii", "backslashreplace"))
        offset += length
    if offset + 4 > len(message):
        return None
    qtype = struct.unpack("!H", message[offset : offset + 2])[0]
    return Query(ident, flags, ".".join(labels), qtype, message[12 : offset + 4])


def answer(query: Query, address: str) -> bytes:
    """The answer: one A record pointing at `address` for an A query, nothing (NOERROR) for any other type."""
    flags = 0x8000 | (query.flags & 0x7900) | 0x0400 | 0x0080  # QR, opcode+RD kept, AA, RA, rcode 0
    records = b""
    if query.qtype == 1:
        rdata = ipaddress.IPv4Address(address).packed
        records = struct.pack("!HHHIH", 0xC00C, 1, 1, TTL, len(rdata)) + rdata
    header = struct.pack("!HHHHHH", query.id, flags, 1, 1 if records else 0, 0, 0)
    return header + query.question + records
