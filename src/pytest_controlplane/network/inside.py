"""What the holder does to the fresh namespaces it runs in, before the sink opens: routes, redirects, and the files a
resolver reads.  Nothing here may ever run in the host's namespaces: `confine` checks first.

Measured here (Linux 6.18, nftables 1.0.6), in `unshare --net --mount`:
- `ip route add local 0.0.0.0/0 dev lo` (and `local ::/0`) makes every address local: a connect to 203.0.113.7:8080
  lands on a listener bound to 0.0.0.0:8080, and a UDP query to the host's resolver address lands on [::]:53.
- nftables `redirect` in a nat output chain sends every TCP connection to the sink's port; SO_ORIGINAL_DST
  (IP6T_SO_ORIGINAL_DST for IPv6) gives back the address and port the client asked for.
- nftables `tproxy` in a prerouting chain (loopback traffic passes it on the way in) hands every UDP datagram to one
  transparent socket; IP_RECVORIGDSTADDR gives the original destination.  Replies (`ct direction reply`) pass.
The namespace has no interface but lo: whatever a process inside does to these rules (as root it can), nothing it
sends reaches anything but the namespace's own loopback.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path
from typing import Any

SINK_PORT = 1  # where every TCP connection and UDP datagram to a non-loopback address is sent (tcpmux: nobody's)
DNS_PORT = 53
MS_BIND = 4096
# A resolver that asks systemd-resolved or nscd over a unix socket would reach the host's resolver from inside:
# those sockets are hidden under an empty tmpfs.
_RESOLVER_SOCKETS = ("/run/systemd/resolve", "/run/nscd", "/var/run/nscd")


# Devices the kernel puts in every new namespace when tunnel modules are loaded: down, no address, and whatever they
# would encapsulate is routed in this namespace again, so to lo.
_FALLBACK_TUNNELS = frozenset(
    {"tunl0", "gre0", "gretap0", "erspan0", "ip_vti0", "ip6_vti0", "sit0", "ip6tnl0", "ip6gre0", "ip6erspan0"}
)


class SetupError(Exception):
    """The namespace could not be confined: one line, sent to the host as the reason."""


def ruleset(*, ipv6: bool) -> str:
    """The nftables rules: TCP to any non-loopback address to the sink; UDP (DNS aside) to the sink's datagram port."""
    v6_tcp = "ip6 daddr != ::1 meta l4proto tcp redirect to :%d" % SINK_PORT if ipv6 else ""
    v6_udp = "ip6 daddr != ::1 udp dport != %d tproxy ip6 to [::1]:%d" % (DNS_PORT, SINK_PORT) if ipv6 else ""
    return f"""
table inet world_network {{
  chain tcp_out {{
    type nat hook output priority -100; policy accept;
    ip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :{SINK_PORT}
    {v6_tcp}
  }}
  chain udp_in {{
    type filter hook prerouting priority -150; policy accept;
    ct direction reply accept
    ip daddr != 127.0.0.0/8 udp dport != {DNS_PORT} tproxy ip to 127.0.0.1:{SINK_PORT}
    {v6_udp}
  }}
}}
"""


def confine(config: dict[str, Any]) -> dict[str, Any]:
    """Check that this process is in namespaces of its own, then set them up; returns facts for the host."""
    here_net, here_mnt = os.readlink("/proc/self/ns/net"), os.readlink("/proc/self/ns/mnt")
    if here_net == config["host_net"] or here_mnt == config["host_mnt"]:
        raise SetupError(f"the holder is not in a namespace of its own ({here_net}, {here_mnt}): nothing was changed")
    ip, nft = config["tools"]["ip"], config["tools"]["nft"]
    names = [
        line.split(": ")[1].split("@")[0] for line in _run([ip, "-o", "link", "show"]).splitlines() if ": " in line
    ]
    foreign = [name for name in names if name != "lo" and name not in _FALLBACK_TUNNELS]
    if foreign or "lo" not in names:
        raise SetupError(f"the new network namespace has interfaces besides lo: {names}")
    ipv6 = os.path.exists("/proc/sys/net/ipv6")
    batch = "link set lo up\nroute add local 0.0.0.0/0 dev lo\n" + ("route add local ::/0 dev lo\n" if ipv6 else "")
    _run([ip, "-batch", "-"], batch)
    _run([nft, "-f", "-"], ruleset(ipv6=ipv6))
    mounted = _mount_resolver_files(Path(config["directory"]) / "etc")
    return {"ipv6": ipv6, "mounted": mounted}


def _run(argv: list[str], stdin: str | None = None) -> str:
    result = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise SetupError(f"`{' '.join(argv)}` failed: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


def _mount_resolver_files(etc: Path) -> list[str]:
    """resolv.conf naming the sink, a hosts file knowing only loopback names, nsswitch asking only files and DNS:
    bind-mounted over the real ones in this mount namespace only (the host's files are never written)."""
    etc.mkdir(parents=True, exist_ok=True)
    hostname = os.uname().nodename
    files = {
        "resolv.conf": "nameserver 127.0.0.1\noptions timeout:2 attempts:1\n",
        "hosts": f"127.0.0.1\tlocalhost {hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n",
        "nsswitch.conf": _nsswitch(),
    }
    mounted = []
    for name, content in files.items():
        (etc / name).write_text(content)
        target = Path("/etc") / name
        if target.exists():  # a missing resolv.conf means 127.0.0.1 to glibc anyway
            _mount(str(etc / name), str(target.resolve()), None, MS_BIND)
            mounted.append(str(target))
    for directory in _RESOLVER_SOCKETS:
        if os.path.isdir(directory):
            _mount("tmpfs", directory, "tmpfs", 0)
            mounted.append(directory)
    return mounted


def _nsswitch() -> str:
    try:
        lines = Path("/etc/nsswitch.conf").read_text().splitlines()
    except OSError:
        lines = []
    kept = [line for line in lines if not line.strip().startswith("hosts:")]
    return "\n".join([*kept, "hosts:          files dns", ""])


def _mount(source: str, target: str, fstype: str | None, flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    encoded = fstype.encode() if fstype else None
    if libc.mount(source.encode(), target.encode(), encoded, ctypes.c_ulong(flags), None) != 0:
        errno = ctypes.get_errno()
        raise SetupError(f"mount {source} on {target} failed: {os.strerror(errno)}")
