"""The host's side of a world's namespaces: the tools that make and enter them, the identity of a namespace (the
inode of /proc/PID/ns/net), and finding and ending every process inside one.

Measured here (Linux 6.18, util-linux 2.38, as root): `unshare --net --mount` makes both namespaces; entering a mount
namespace moves the caller to its root directory, so `nsenter --wd=.` (opened before the switch) keeps the caller's.
A process that daemonised inside the world is no child of ours: it is found by its namespace, not by its parent.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

from ..errors import ControlPlaneError

# Where iproute2 and nftables live on Debian: /usr/sbin is not on a non-root user's PATH there.
_SBIN = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
_PACKAGES = {
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "ip": "iproute2",
    "nft": "nftables",
    "readlink": "coreutils",
}


SWITCH = "CONTROLPLANE_NETWORK"  # "off": no namespace is made, as where none can be (to see what runs then)


class NetworkUnavailable(ControlPlaneError):
    """A world network could not be made here; `reason` says why in one line, `hint` how to make it possible."""

    def __init__(self, reason: str, *, hint: str = "") -> None:
        self.reason = reason
        super().__init__(f"World network unavailable: {reason}", hint=hint)


def tool(name: str) -> str:
    """The absolute path of a system tool the world network needs, or NetworkUnavailable naming its package."""
    found = shutil.which(name) or next(
        (f"{d}/{name}" for d in _SBIN if os.access(f"{d}/{name}", os.X_OK)),
        None,
    )
    if found is None:
        package = _PACKAGES.get(name, name)
        raise NetworkUnavailable(
            f"`{name}` is not installed.",
            hint=f"Install it: `apt-get install {package}` (Debian/Ubuntu), or your system's {package} package.",
        )
    return found


def refuse_if_switched_off() -> None:
    """NetworkUnavailable where no namespace is to be made: switched off, or not Linux."""
    if os.environ.get(SWITCH, "").lower() == "off":
        raise NetworkUnavailable(f"{SWITCH}=off: no world network is made, as on a machine without namespaces.")
    if not sys.platform.startswith("linux"):
        raise NetworkUnavailable(f"it needs Linux network namespaces, and this is {sys.platform}.")


def offline() -> list[str]:
    """A command prefix that runs a program in a network namespace of its own with nothing in it (`unshare --net`;
    without root, in a user namespace too): for a program that looks names up as it starts, such as Chromium, where
    nothing may reach the host's network.  NetworkUnavailable where none can be made."""
    refuse_if_switched_off()
    prefix = [tool("unshare"), "--net", *(["--map-root-user"] if user_namespace_needed() else [])]
    tried = subprocess.run([*prefix, "true"], capture_output=True, text=True, check=False)
    if tried.returncode:
        raise NetworkUnavailable(f"`unshare --net` failed: {tried.stderr.strip() or tried.returncode}")
    return prefix


def namespace_id(pid: int | str, kind: str = "net") -> str:
    """The identity of a process's namespace, as `readlink /proc/PID/ns/KIND` prints it: "net:[4026532178]"."""
    return os.readlink(f"/proc/{pid}/ns/{kind}")


def user_namespace_needed() -> bool:
    """Without root, the namespaces are made inside a new user namespace (where we are root)."""
    return os.geteuid() != 0


def pids_in(net_id: str) -> list[int]:
    """Every live process whose network namespace is `net_id` (zombies have none and are not listed)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.readlink(f"/proc/{entry.name}/ns/net") == net_id:
                    found.append(int(entry.name))
            except OSError:
                continue  # gone meanwhile, or not ours to look at
    return found


def kill_all(net_id: str, *, spare: int | None = None, timeout: float = 5.0) -> list[int]:
    """SIGKILL every process inside the namespace (but `spare`) until none is left; returns those still there."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids_in(net_id) if pid != spare and pid != os.getpid()]
        if not left or time.monotonic() > deadline:
            return left
        for pid in left:
            _kill_if_inside(pid, net_id)
        while any(_inside(pid, net_id) for pid in left) and time.monotonic() < deadline:
            time.sleep(0.002)  # SIGKILL is delivered, not instant


def _kill_if_inside(pid: int, net_id: str) -> None:
    """Kill `pid` if it is (still) inside: the pidfd pins the process, so a pid reused meanwhile is never hit."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return  # gone
    try:
        if _inside(pid, net_id):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(pidfd)


def _inside(pid: int, net_id: str) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/ns/net") == net_id
    except OSError:
        return False


def enter_argv(holder: int, net_id: str, *, user: bool) -> list[str]:
    """The argv prefix that runs a command inside the holder's namespaces, in the caller's working directory, after
    checking (in the entered process itself, before exec) that it really is in the world's network namespace."""
    argv = [tool("nsenter"), f"--net=/proc/{holder}/ns/net", f"--mount=/proc/{holder}/ns/mnt", "--wd=."]
    if user:  # keep our credentials: setgroups is denied in a user namespace made without root
        argv[1:1] = [f"--user=/proc/{holder}/ns/user", "--preserve-credentials"]
    check = (
        'here=$("$2" /proc/$$/ns/net); [ "$here" = "$1" ] || '
        '{ echo "world network: refusing to run outside the world (in $here, not $1)" >&2; exit 125; }; '
        'shift 2; exec "$@"'
    )
    return [*argv, "/bin/sh", "-c", check, "world-network", net_id, tool("readlink")]


def iter_lines(fd: int, deadline: float) -> Iterator[str]:
    """Lines read from a pipe until EOF or the deadline (a TimeoutError then)."""
    pending = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            raise TimeoutError
        chunk = os.read(fd, 4096)
        if not chunk:
            if pending:
                yield pending.decode(errors="replace")
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode(errors="replace")
