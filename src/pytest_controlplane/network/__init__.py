"""The world network: the core of the egress oracle.  An agent runs inside a Linux network namespace where every DNS
name resolves, every address and TCP port connects, every UDP datagram is received, and everything is recorded as
`Egress` records, while no packet can reach anything but the namespace's own loopback.

    with WorldNetwork(directory, bridges={8123: "/path/gateway.sock"}) as net:
        subprocess.run(net.wrap(argv), env={**os.environ, **net.env()})
        net.wait_for(lambda e: e.host == "collector.example")

Modules: `world` (the host's handle), `namespace` (making, entering and emptying namespaces), `inside` (routes,
nftables rules, resolver files of the namespace), `sink` (the holder and server inside), `handlers` (one TCP
connection), `streams`, `tls`, `dns`, `http_request` (what the sink speaks), `bridge` (unix-socket bridges), `egress`
(the record).  Needs Linux, root or user namespaces, and util-linux, iproute2 and nftables.
"""

from __future__ import annotations

from .bridge import UnixBridge, serve_unix_to_tcp
from .egress import Egress
from .namespace import NetworkUnavailable
from .world import WorldNetwork

__all__ = ["Egress", "NetworkUnavailable", "UnixBridge", "WorldNetwork", "serve_unix_to_tcp"]
