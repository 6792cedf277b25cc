"""Run a command and list every packet it sent to the host's network: DNS names asked and TCP connections opened on any
interface but loopback (no test may send one, but to the package registries).

    sudo .venv/bin/python tools/host_traffic.py -- make test

Root only (a packet socket sees the whole host, so anything else running meanwhile shows too).  The summary counts
DNS questions by name and resolver, and TCP connections by address and port.  A world network's packets never show:
they stay in its own namespace.
"""

from __future__ import annotations

import argparse
import collections
import socket
import struct
import subprocess
import sys
import threading

_ALL = 0x0003  # ETH_P_ALL


def _question(dns: bytes) -> str:
    labels, at = [], 12
    while at < len(dns) and dns[at]:
        labels.append(dns[at + 1 : at + 1 + dns[at]].decode(errors="replace"))
        at += 1 + dns[at]
    return ".".join(labels)


def _watch(seen: collections.Counter[str], stop: threading.Event, ready: threading.Event) -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(_ALL)) as sniffer:
        sniffer.settimeout(0.2)
        ready.set()
        while not stop.is_set():
            try:
                frame, (interface, _, kind, *_) = sniffer.recvfrom(65535)
            except TimeoutError:
                continue
            if interface == "lo" or kind != socket.PACKET_OUTGOING or frame[12:14] != b"\x08\x00":
                continue  # IPv4 leaving this host only
            ip = frame[14:]
            l4, protocol, to = ip[(ip[0] & 15) * 4 :], ip[9], socket.inet_ntoa(ip[16:20])
            port = struct.unpack("!H", l4[2:4])[0]
            if protocol == 17 and port == 53:
                seen[f"DNS {_question(l4[8:])} (asked {to})"] += 1
            elif protocol == 6 and l4[13] & 0x12 == 0x02:  # SYN without ACK: a connection opened
                seen[f"TCP {to}:{port}"] += 1
            elif protocol not in (6, 17):
                seen[f"IP protocol {protocol} to {to}"] += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="+", help="what to run (after --)")
    args = parser.parse_args(argv)
    seen: collections.Counter[str] = collections.Counter()
    stop, ready = threading.Event(), threading.Event()
    watcher = threading.Thread(target=_watch, args=(seen, stop, ready), daemon=True)
    watcher.start()
    ready.wait(5)
    code = subprocess.run(args.command, check=False).returncode
    stop.set()
    watcher.join()
    print(f"\nsent to the host's network while `{' '.join(args.command)}` ran (exit {code}):", file=sys.stderr)
    for what, count in sorted(seen.items()) or [("nothing", 0)]:
        print(f"  {count:5d}  {what}" if count else "  nothing", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
