"""`WorldNetwork`: a network namespace where every name resolves, every address and port answers, and everything
sent is recorded, from which nothing reaches anything but the namespace's own loopback.  The egress oracle's core.

    with WorldNetwork(directory, bridges={8123: "/path/host.sock"}) as net:
        subprocess.run(net.wrap(["python3", "-c", "..."]), env={**os.environ, **net.env()})
        net.events()   # [Egress(kind="dns", host="collector.example", ...), Egress(kind="https", ...)]

One holder process per world (`sink.py`, started by `unshare --net --mount`) owns both namespaces and answers
everything; `wrap` enters them with `nsenter`, after checking in the entered process that it is in this world's
network namespace.  The namespace has only lo, so safety holds by construction, whatever runs inside does to its
routes and rules.  What a root process inside could still do on purpose: enter the host's namespaces with setns
(it has the capability), or talk to the host's unix sockets (the filesystem is shared); this is an oracle for
agents that leak by mistake or are talked into it, not a jail.

Measured here (2 cores, bench/world_network.py, medians of 10): start + close ~0.2 s (the sink's Python start and
imports ~0.1 s, unshare + ip + nft ~0.02 s); a wrapped command costs ~5 ms more than run directly (`true`: 1.7 ->
6.7 ms; `python3 -c pass`: 18 -> 28 ms); an HTTPS request from a fresh python3 inside ~0.1 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from .egress import Egress, read_log
from .inside import SINK_PORT
from .namespace import (
    NetworkUnavailable,
    enter_argv,
    iter_lines,
    kill_all,
    namespace_id,
    refuse_if_switched_off,
    tool,
    user_namespace_needed,
)

SINK_ADDRESS = "198.18.0.1"  # every name resolves here (benchmarking range: never anyone's real address)
CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the sink runs the same copy of this package


class WorldNetwork:
    """A world's network: a context manager; `wrap`, `env`, `events` and `wait_for` while it is open.

    directory     a folder of this world's that it may write in (the CA, the egress log, the sink's stderr)
    bridges       {port: unix socket path}: 127.0.0.1:port (and [::1]:port) inside forwards to the unix socket,
                  unrecorded (see `serve_unix_to_tcp` for the host's end)
    idle_timeout  seconds of silence after which the sink closes a connection it has not answered (raw TCP)
    """

    def __init__(
        self,
        directory: Path | str,
        *,
        bridges: Mapping[int, Path | str] | None = None,
        idle_timeout: float = 2.0,
        start_timeout: float = 15.0,
    ) -> None:
        self.directory = Path(directory).resolve()
        self.bridges = {int(port): str(Path(path).resolve()) for port, path in (bridges or {}).items()}
        for port in self.bridges:
            if not 0 < port < 65536 or port in (SINK_PORT, 53):
                raise ValueError(f"bridge port {port}: choose a port in 2..65535 other than 53")
        self.idle_timeout = idle_timeout
        self.start_timeout = start_timeout
        self.sink_address = SINK_ADDRESS
        self.facts: dict[str, object] = {}
        self._holder: subprocess.Popen[bytes] | None = None
        self._net_id = ""
        self._user = user_namespace_needed()

    # -- lifecycle

    def __enter__(self) -> WorldNetwork:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        """Make the namespaces, confine them and open the sink; return once it answers (NetworkUnavailable if not)."""
        if self._holder is not None:
            raise RuntimeError("this WorldNetwork is already started")
        refuse_if_switched_off()
        tools = {name: tool(name) for name in ("unshare", "nsenter", "ip", "nft")}
        self.directory.mkdir(parents=True, exist_ok=True)
        config = {
            "directory": str(self.directory),
            "host_net": namespace_id("self"),
            "host_mnt": namespace_id("self", "mnt"),
            "tools": tools,
            "bridges": self.bridges,
            "sink_address": self.sink_address,
            "idle_timeout": self.idle_timeout,
        }
        unshare = [tools["unshare"], "--net", "--mount", "--propagation", "slave"]
        if self._user:
            unshare[1:1] = ["--user", "--map-root-user"]
        argv = [*unshare, "--", sys.executable, "-m", "pytest_controlplane.network.sink", json.dumps(config)]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": _PACKAGE_ROOT}
        with open(self.directory / "sink.log", "ab") as stderr:
            holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)
        self._holder = holder
        try:
            self._wait_ready(holder)
        except BaseException:
            self.close()
            raise

    def _wait_ready(self, holder: subprocess.Popen[bytes]) -> None:
        assert holder.stdout is not None
        deadline = time.monotonic() + self.start_timeout
        try:
            line = next(iter_lines(holder.stdout.fileno(), deadline), "")
        except TimeoutError:
            raise NetworkUnavailable(
                f"the sink did not start within {self.start_timeout:.0f} s (see {self.directory / 'sink.log'})."
            ) from None
        if line.startswith("ready "):
            self.facts = json.loads(line[6:])
            self._net_id = namespace_id(holder.pid)
            if self._net_id == namespace_id("self"):
                raise NetworkUnavailable("the holder is in the host's network namespace.")
            return
        reason = line.removeprefix("error ").strip() or self._why_not(holder)
        raise NetworkUnavailable(reason, hint=_hint(reason, self._user))

    def _why_not(self, holder: subprocess.Popen[bytes]) -> str:
        try:
            holder.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "the sink closed its output without saying it was ready"
        log = (self.directory / "sink.log").read_text(errors="replace").strip().splitlines()
        return log[-1] if log else f"the holder exited with status {holder.returncode}"

    def close(self) -> None:
        """End every process inside the world (those started with `wrap` and their children too), then the holder."""
        holder, self._holder = self._holder, None
        if holder is None:
            return
        if self._net_id:
            kill_all(self._net_id, spare=holder.pid)
        if holder.stdin is not None:
            holder.stdin.close()
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
        if self._net_id:
            kill_all(self._net_id)  # whatever started in between
        self._net_id = ""

    # -- use

    @property
    def running(self) -> bool:
        return self._holder is not None and self._holder.poll() is None

    @property
    def net_id(self) -> str:
        """The world's network namespace, as readlink /proc/PID/ns/net shows it ("net:[4026532178]")."""
        return self._started()._net_id

    @property
    def ca_file(self) -> Path:
        """The world CA's certificate (PEM): the only one the processes given `env()` trust."""
        return self.directory / "ca.pem"

    @property
    def log_file(self) -> Path:
        return self.directory / "egress.jsonl"

    @property
    def proxy_url(self) -> str:
        """A proxy address for clients that want one (HTTP_PROXY/HTTPS_PROXY): the sink tunnels CONNECT too."""
        return f"http://{self.sink_address}:3128"

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The argv that runs `argv` inside the world, in the caller's working directory; it refuses (exit 125)
        when the process it starts is not in this world's network namespace."""
        if not argv:
            raise ValueError("wrap() needs a command")
        holder = self._started()._holder
        assert holder is not None
        return [*enter_argv(holder.pid, self._net_id, user=self._user), *argv]

    def env(self) -> dict[str, str]:
        """Variables that make clients inside trust the world CA (add them to the environment of wrapped commands)."""
        self._started()
        return dict.fromkeys(CA_VARIABLES, str(self.ca_file))

    def events(self) -> list[Egress]:
        """Everything recorded so far, oldest first.  A request that got its answer is already here."""
        return read_log(self.log_file)

    def wait_for(self, until: int | Callable[[Egress], bool] = 1, timeout: float = 5.0) -> list[Egress]:
        """Wait until `until` records exist (an int) or one matches it (a predicate), and return them (all the
        records, or the matching ones); TimeoutError listing what was recorded when that does not happen."""
        deadline = time.monotonic() + timeout
        while True:
            events = self.events()
            found = events if isinstance(until, int) else [e for e in events if until(e)]
            if (len(found) >= until) if isinstance(until, int) else found:
                return found
            if time.monotonic() > deadline:
                seen = "\n".join(f"  {e}" for e in events) or "  (nothing)"
                raise TimeoutError(f"no egress matching {until!r} within {timeout} s; recorded:\n{seen}")
            time.sleep(0.01)

    def processes(self) -> list[int]:
        """The processes inside the world now, the holder included."""
        from .namespace import pids_in

        return pids_in(self._net_id) if self._net_id else []

    def _started(self) -> WorldNetwork:
        if self._holder is None or not self._net_id:
            raise RuntimeError("the WorldNetwork is not open: use it as a context manager (`with WorldNetwork(...)`)")
        return self


def _hint(reason: str, user: bool) -> str:
    if "Operation not permitted" in reason or "Permission denied" in reason:
        if user:
            return (
                "Run as root, or allow unprivileged user namespaces "
                "(`sysctl -w kernel.unprivileged_userns_clone=1`, `sysctl -w user.max_user_namespaces=15000`)."
            )
        return "The container may forbid namespaces: run it with --privileged or CAP_SYS_ADMIN and CAP_NET_ADMIN."
    if "nft" in reason and ("No such file" in reason or "not supported" in reason):
        return "The kernel needs nf_tables with NAT redirect and TPROXY (nft_redir, nft_tproxy): `modprobe nft_tproxy`."
    return ""
