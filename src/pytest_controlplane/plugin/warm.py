"""pytest wiring of warm agents (agents/warm.py): the pool a bypass variant or audit item plays in, one folder of
pools' worlds per process, and the pools closed when the test session ends."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

_BASE = pytest.StashKey[Path]()


def warm_pool(request: pytest.FixtureRequest, agent: Any, template: Path | None, *, network: bool = False) -> Any:
    """The warm pool a bypass variant, an audit item or an `agent_warm` test plays in (ini agent_warm, default
    true), or None: cold.  `network`, or the egress family: a pool in a world network of its own."""
    node = request.node
    if not request.config.getini("agent_warm") or not (
        node.get_closest_marker("bypass_variants")
        or node.get_closest_marker("agent_warm")
        or "agent_audit_case" in request.fixturenames
    ):
        return None
    from ..agents.warm import pool_for

    if _BASE not in request.config.stash:  # one folder per process for its pools' worlds
        request.config.stash[_BASE] = request.getfixturevalue("tmp_path_factory").mktemp("controlplane-warm")
    variants = node.get_closest_marker("bypass_variants")
    network = network or bool(variants and variants.args and variants.args[0] == "egress")
    base = request.config.stash[_BASE]
    return pool_for(agent, Path(template) if template is not None else None, base, network=network)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Close the warm CLIs this process kept."""
    if "pytest_controlplane.agents.warm" in sys.modules:
        sys.modules["pytest_controlplane.agents.warm"].close_pools()
