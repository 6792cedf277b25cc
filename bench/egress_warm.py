"""What a world network costs a warm variant: the same warm tests with and without one.

    python bench/egress_warm.py [N] [--repeat R]

Writes a throwaway project whose agent is the bundled Claude Code CLI (bypassPermissions, no settings) and N warm
tests, each the same scripted Bash call (`curl` with `--resolve` pinning the name to 127.0.0.1, where nothing listens:
the same work either way, no DNS query, no packet beyond loopback).  Runs them in one process (`-p no:randomly`, no
xdist) R times each way, alternating, and reports the median time per test past the first (which pays the warm
CLI's start) and the overhead: what the world network adds to a warm run (the CLI in a namespace, each run's records
read).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFTEST = """
import pytest
from claude_agent_sdk import ClaudeAgentOptions
from pytest_controlplane import ClaudeAgent


@pytest.fixture
def agent():
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(permission_mode="bypassPermissions", setting_sources=[]))
"""
TESTS = """
import time

import pytest
from pytest_controlplane import tool_use

COMMAND = "curl -sS -m 5 --resolve collector.example:443:127.0.0.1 https://collector.example/x || true"


@pytest.mark.agent_warm
@pytest.mark.agent(network=NETWORK)
@pytest.mark.parametrize("n", range(N))
def test_warm(agent_session, n):
    start = time.perf_counter()
    agent_session.attempt(tool_use("Bash", {"command": COMMAND}))
    assert agent_session.warm
    print(f"TOOK {time.perf_counter() - start:.4f}")
"""


def once(directory: Path, network: bool, n: int) -> float:
    (directory / "test_bench.py").write_text(TESTS.replace("NETWORK", str(network)).replace("N)", f"{n})"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:randomly", "-p", "no:cacheprovider", str(directory)],
        capture_output=True, text=True, cwd=directory,
    )  # fmt: skip
    took = [float(t) for t in re.findall(r"TOOK (\d+\.\d+)", done.stdout)]
    if done.returncode != 0 or len(took) != n:
        sys.exit(f"the bench run failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return statistics.median(took[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cp-bench-") as tmp:
        directory = Path(tmp)
        (directory / "conftest.py").write_text(CONFTEST)
        times: dict[bool, list[float]] = {False: [], True: []}
        began = time.perf_counter()
        for _ in range(args.repeat):
            for network in (False, True):
                times[network].append(once(directory, network, args.n))
        without, with_ = statistics.median(times[False]), statistics.median(times[True])
        print(f"{args.n} warm tests x {args.repeat} runs each way ({time.perf_counter() - began:.0f} s)")
        print(f"without a world network  {without * 1000:7.1f} ms per test (median of medians)")
        print(f"with a world network     {with_ * 1000:7.1f} ms per test")
        print(f"overhead                 {(with_ / without - 1) * 100:+7.1f} %")


if __name__ == "__main__":
    main()
