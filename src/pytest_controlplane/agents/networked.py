"""A world's own network for each run of its agent (network/: a namespace where every name resolves, every address
answers and is recorded, and nothing leaves), when the test asks for one (`@pytest.mark.agent(network=True)`, ini
`agent_network`, and every variant of the egress family).

The agent's process starts inside it: the Claude Code CLI through a one-line launcher given as `cli_path`, a
CommandAgent's argv wrapped; whatever they start (Bash commands, hooks, MCP servers) inherits it.  The model gateway
stays reachable at the same 127.0.0.1:PORT inside, bridged over a unix socket.  Where the namespace cannot be made,
the run goes ahead offline and `unavailable` says why (an egress variant is then not applicable): never on the host's
network.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


@dataclass
class NetworkState:
    """Whether a world's runs get a network of their own, the one of the run going on, and what each run sent."""

    wanted: bool = False
    running: Any = None  # the WorldNetwork while a run goes on
    unavailable: str = ""  # why it could not be made here (one line), once a run tried
    runs: int = 0
    records: list[Any] = field(default_factory=list)  # the last run's network.Egress records


def directory(world: Any) -> Path:
    """Where a world's network keeps its CA, log and sockets: beside the world, so no snapshot of it sees them."""
    return world.root.parent / f"{world.root.name}.net"


@contextlib.contextmanager
def world_network(world: Any, base_url: str) -> Iterator[None]:
    """A network for one run of `world`'s agent (nothing when none is wanted); its records in `world.network.records`
    afterwards."""
    state: NetworkState = world.network
    state.records = []
    if not state.wanted:
        yield
        return
    from ..network import NetworkUnavailable, WorldNetwork, serve_unix_to_tcp

    state.runs += 1
    place = directory(world) / f"run-{state.runs}"
    place.mkdir(parents=True, exist_ok=True)
    port = urlsplit(base_url).port or 80
    socket_path = place / "gateway.sock"
    net = WorldNetwork(place, bridges={port: socket_path})
    with serve_unix_to_tcp(socket_path, "127.0.0.1", port):
        try:
            net.start()
        except NetworkUnavailable as error:
            state.unavailable = error.reason
            yield
            return
        state.running = net
        try:
            yield
        finally:
            state.running = None
            net.close()
            state.records = net.events()


def launcher(world: Any, cli_path: str) -> str:
    """A script that runs the Claude Code CLI at `cli_path` inside the world's running network (its cli_path)."""
    net = world.network.running
    script = directory(world) / f"run-{world.network.runs}" / "claude"
    script.write_text("#!/bin/sh\nexec " + shlex.join(net.wrap([cli_path])) + ' "$@"\n')
    script.chmod(0o755)
    return str(script)


def bundled_cli() -> str:
    """The Claude Code CLI the SDK would run (its bundled one, else `claude` on PATH)."""
    import shutil

    import claude_agent_sdk

    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return str(bundled) if bundled.is_file() else shutil.which("claude") or "claude"


def network_env(world: Any) -> dict[str, str]:
    """What a process in the running network needs: its CA for the TLS clients ({} with none running)."""
    net = world.network.running
    return dict(net.env()) if net is not None else {}


def wrap(world: Any, argv: list[str]) -> list[str]:
    """`argv` run inside the world's running network (as it is with none)."""
    net = world.network.running
    return list(net.wrap(argv)) if net is not None else argv
