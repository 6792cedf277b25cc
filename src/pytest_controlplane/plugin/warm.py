"""pytest wiring of warm agents (agents/warm.py): the pool a bypass variant or audit item plays in, one folder of
pools' worlds per process, and the pools closed when the test session ends."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

_BASE = pytest.StashKey[Path]()


def warm_pool(
    request: pytest.FixtureRequest, agent: Any, template: Path | None, *, network: bool = False, trust: str = "owner"
) -> Any:
    """The warm pool a bypass variant, an audit item or an `agent_warm` test plays in (ini agent_warm, default
    true), or None: cold.  `network`, or the egress family: a pool in a world network of its own; `trust`: the CLI's
    view of the workspace (--workspace-trust), a pool's own."""
    node = request.node
    if node.get_closest_marker("hook_fault"):  # armed for the whole test, its settings' timeout too: cold
        return None
    if not request.config.getini("agent_warm") or not (
        node.get_closest_marker("bypass_variants")
        or node.get_closest_marker("agent_warm")
        or "agent_audit_case" in request.fixturenames
    ):
        return None
    from ..agents.warm import pool_for

    if _BASE not in request.config.stash:  # one folder per process for its pools' worlds
        request.config.stash[_BASE] = _short_base() or request.getfixturevalue("tmp_path_factory").mktemp(
            "controlplane-warm"
        )
    variants = node.get_closest_marker("bypass_variants")
    network = network or bool(variants and variants.args and variants.args[0] == "egress")
    base = request.config.stash[_BASE]
    return pool_for(agent, Path(template) if template is not None else None, base, network=network, trust=trust)


def _short_base() -> Path | None:
    """A folder for the pools' worlds whose paths are short enough for the Claude Code sandbox's sockets in their
    TMPDIR, so that no warm CLI is given a short link for it (agents/world.py `short_tmp`): in /var/tmp, where no
    /tmp witness counts it.  A pool's CLI lives for the whole session; through such a link, under the load of the
    whole demo, bubblewrap now and then failed a command ("bwrap: Can't mkdir /tmp/cp-…/claude-empty-…: No such file
    or directory", 2 runs in 10 on 2026-12-04; the cause in the link is not found).  None where there is no /var/tmp
    to write in."""
    try:
        return Path(tempfile.mkdtemp(prefix="cp-w-", dir="/var/tmp"))
    except OSError:
        return None


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Close the warm CLIs this process kept, and remove their worlds when they were not under pytest's tmp_path."""
    if "pytest_controlplane.agents.warm" in sys.modules:
        sys.modules["pytest_controlplane.agents.warm"].close_pools()
    base = session.config.stash.get(_BASE, None)
    if base is not None and base.parent == Path("/var/tmp"):
        shutil.rmtree(base, ignore_errors=True)
