"""A world's own network for each run of its agent (network/: a namespace where every name resolves, every address
answers and is recorded, and nothing leaves), when the test asks for one (`@pytest.mark.agent(network=True)`, ini
`agent_network`, and every variant of the egress family).

The agent's process starts inside it: the Claude Code CLI through a one-line launcher given as `cli_path`, a
CommandAgent's argv wrapped; whatever they start (Bash commands, hooks, MCP servers) inherits it.  The model gateway
stays reachable at the same 127.0.0.1:PORT inside, bridged over a unix socket.  Where the namespace cannot be made
(`unavailable_here`), a run that asked for one never starts: an egress variant is not applicable and a test marked
`network=True` is skipped before anything runs; a network that fails all the same stops the run (AgentError).  Never
the host's network.
"""

from __future__ import annotations

import contextlib
import functools
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

OFFLINE = (
    "the test ran offline, without a world network (mark it @pytest.mark.agent(network=True), or set the ini option "
    "agent_network = true)"
)


@dataclass
class NetworkState:
    """Whether a world's runs get a network of their own, the one of the run going on, and what each run sent."""

    wanted: bool = False
    running: Any = None  # the WorldNetwork while a run goes on
    unavailable: str = ""  # why it could not be made here (one line), once a run tried
    runs: int = 0
    records: list[Any] = field(default_factory=list)  # the last run's network.Egress records
    pooled: bool = False  # the network lives as long as a warm pool's CLI (its runs' records are cut by time)

    def last_run(self) -> tuple[list[Any], str]:
        """The last run's records, and why none could be (a world offline, or a namespace that cannot be made)."""
        return self.records, "" if self.wanted else OFFLINE


def directory(world: Any) -> Path:
    """Where a world's network keeps its CA, log and sockets: beside the world, so no snapshot of it sees them."""
    return world.root.parent / f"{world.root.name}.net"


@contextlib.contextmanager
def world_network(world: Any, base_url: str) -> Iterator[None]:
    """A network for one run of `world`'s agent (nothing when none is wanted); its records in `world.network.records`
    afterwards."""
    state: NetworkState = world.network
    state.records = []
    if state.pooled:  # a warm pool's: what was recorded since this run began
        began = time.time()
        try:
            yield
        finally:
            net = state.running
            state.records = [e for e in net.events() if e.time >= began] if net is not None else []
        return
    if not state.wanted:
        yield
        return
    closing = contextlib.ExitStack()
    with closing:
        net = _started(world, base_url, closing)
        if net is None:  # asked for, and not to be had: the run never goes ahead on the host's network
            from ..errors import AgentError

            raise AgentError(
                f"No world network could be made for this run ({state.unavailable}), so it was not started: a run "
                "that asked for one never goes ahead on the host's network.",
                hint="Install iproute2 and nftables, and run as root or where user namespaces are allowed.",
            )
        try:
            yield
        finally:
            state.running = None
            closing.close()
            state.records = net.events() if net is not None else []


def for_pool(world: Any, base_url: str) -> contextlib.ExitStack:
    """A network for a warm pool's world, open until the returned stack is closed (its CLI starts inside it)."""
    world.network.wanted = world.network.pooled = True
    closing = contextlib.ExitStack()
    _started(world, base_url, closing)
    return closing


def _started(world: Any, base_url: str, closing: contextlib.ExitStack) -> Any:
    """Start a network for `world` (closed with `closing`), the gateway bridged in; None, and `unavailable` said,
    where it cannot be made."""
    from ..network import NetworkUnavailable, WorldNetwork, serve_unix_to_tcp

    state: NetworkState = world.network
    if why := unavailable_here():
        state.unavailable = why
        return None
    state.runs += 1
    place = directory(world) / f"run-{state.runs}"
    place.mkdir(parents=True, exist_ok=True)
    port = urlsplit(base_url).port or 80
    socket_path = place / "gateway.sock"
    closing.enter_context(serve_unix_to_tcp(socket_path, "127.0.0.1", port))
    net = WorldNetwork(place, bridges={port: socket_path})
    try:
        net.start()
    except NetworkUnavailable as error:
        state.unavailable = error.reason
        return None
    closing.callback(net.close)
    state.running = net
    return net


def launcher(world: Any, cli_path: str) -> str:
    """A script that runs the Claude Code CLI at `cli_path` inside the world's running network (its cli_path)."""
    net = world.network.running
    script = directory(world) / f"run-{world.network.runs}" / "claude"
    script.write_text("#!/bin/sh\nexec " + shlex.join(net.wrap([cli_path])) + ' "$@"\n')
    script.chmod(0o755)
    return str(script)


def network_env(world: Any) -> dict[str, str]:
    """What a process in the running network needs: its CA for the TLS clients ({} with none running), npm's and
    wget's own ways of being told (GnuTLS wget reads no SSL_CERT_FILE: a wgetrc of the world's says it)."""
    net = world.network.running
    if net is None:
        return {}
    wgetrc = net.directory / "wgetrc"
    if not wgetrc.exists():
        wgetrc.write_text(f"ca_certificate = {net.ca_file}\n")
    return {**net.env(), "npm_config_cafile": str(net.ca_file), "WGETRC": str(wgetrc)}


@functools.lru_cache(maxsize=1)
def unavailable_here() -> str:
    """Why no world network can be made on this machine ("" when one can): tried once per process, so that an
    egress variant is found not applicable, and a test that asked for a network skipped, before anything runs."""
    import tempfile

    from ..network import NetworkUnavailable, WorldNetwork

    with tempfile.TemporaryDirectory(prefix="cp-net-probe-") as directory:
        try:
            with WorldNetwork(directory):
                return ""
        except NetworkUnavailable as error:
            return error.reason


def wrap(world: Any, argv: list[str]) -> list[str]:
    """`argv` run inside the world's running network (as it is with none)."""
    net = world.network.running
    return list(net.wrap(argv)) if net is not None else argv
