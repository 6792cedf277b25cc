"""The one rule for tests that need a world network (a module of its own name: `conftest` is every example's too)."""

import os

import pytest


def skip_without_world_network(reason: str) -> None:
    """Skip a test that needs a world network where none can be made (`reason`; "" when one can): it must never run
    on the host's network instead.  In CI, where `.ci/run` installs what the network needs, its absence fails, unless
    it was switched off on purpose (CONTROLPLANE_NETWORK=off)."""
    if not reason:
        return
    if "CI" in os.environ and "CONTROLPLANE_NETWORK=off" not in reason:
        pytest.fail(f"CI must be able to make a world network (`.ci/run` installs nftables): {reason}")
    pytest.skip(f"no world network can be made here: {reason}")
