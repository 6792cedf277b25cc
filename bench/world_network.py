"""What a world network costs: starting and closing one, and running a command inside it.

    python bench/world_network.py [rounds]      # default 10

Times (medians of `rounds`): WorldNetwork start + close; `python3 -c pass` and `true` run directly and through
`net.wrap(...)` (nsenter into both namespaces, the wrapper's namespace check, exec); one HTTPS request from inside
(name lookup, TLS with a fresh certificate for the name, the request recorded); the same with the certificate cached.
Needs root (or user namespaces) and nftables, like the world network itself.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_controlplane.network import WorldNetwork

HTTPS = "import urllib.request, sys; urllib.request.urlopen(f'https://{sys.argv[1]}/x', timeout=10).read()"


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:7.1f} ms"


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    with tempfile.TemporaryDirectory() as tmp:
        lifetimes = []
        for round_ in range(rounds):
            start = time.perf_counter()
            with WorldNetwork(Path(tmp) / f"life{round_}"):
                pass
            lifetimes.append(time.perf_counter() - start)
        print(f"start + close a WorldNetwork         {median_ms(lifetimes)}")
        with WorldNetwork(Path(tmp) / "use") as net:
            env = {**os.environ, **net.env()}
            for label, argv in (("python3 -c pass", [sys.executable, "-c", "pass"]), ("true", ["true"])):
                outside = [timed(argv) for _ in range(rounds)]
                wrapped = [timed(net.wrap(argv)) for _ in range(rounds)]
                print(f"{label:<16} outside                {median_ms(outside)}")
                print(f"{label:<16} inside (wrapped)       {median_ms(wrapped)}")
                overhead = statistics.median(wrapped) - statistics.median(outside)
                print(f"{label:<16} wrapper overhead       {overhead * 1000:7.1f} ms")
            fresh = [timed(net.wrap([sys.executable, "-c", HTTPS, f"n{i}.example"]), env) for i in range(rounds)]
            cached = [timed(net.wrap([sys.executable, "-c", HTTPS, "same.example"]), env) for _ in range(rounds)]
            print(f"python HTTPS request, new name       {median_ms(fresh)}")
            print(f"python HTTPS request, cached cert    {median_ms(cached)}")
            print(f"records written                      {len(net.events()):7d}")


if __name__ == "__main__":
    main()
