"""What the plugin's modules share: stash keys, the user properties records ride home on, and how to tell which
`agent` fixture an item has.  It imports nothing of the plugin's, so every module may import it."""

from __future__ import annotations

from typing import Any

import pytest

AUDIT = "controlplane-audit"  # the user property an audit item's records ride home on
ATTEMPTS = "controlplane-attempts"  # the user property a bypass_variants test's attempts ride home on
AGENT_FROM = "controlplane-agent"  # where an audit item's agent came from: "settings DIR" or "conftest PATH"

FIXTURES = "pytest_controlplane.plugin.fixtures"  # the module of the placeholder `agent` fixture
AUDIT_WIRING = "pytest_controlplane.plugin.audit"  # the module of the audit's own agent, for a settings repository

CALL_FAILED = pytest.StashKey[bool]()  # the test's call failed: what it left unplayed is a consequence
SETTINGS = pytest.StashKey[Any]()  # the test's resolved RunSettings (config.RunSettings)
PLANTINGS = pytest.StashKey[Any]()  # what the test's canaries planted (canary.Plantings)

AGENT_SNIPPET = """\
Define the agent under test in your conftest.py, for example:

    import pytest
    from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
    from pytest_controlplane import ClaudeAgent

    @pytest.fixture
    def agent():
        return ClaudeAgent(lambda workspace: ClaudeAgentOptions(
            hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[my_guard])]},
            permission_mode="acceptEdits"))

A repository whose control plane is its own .claude/settings.json needs only:

    @pytest.fixture
    def agent():
        return ClaudeAgent.project_settings()
"""


def agent_module(node: Any) -> str:
    """The module that defines the `agent` fixture this item (or collector) gets: the user's, or one of ours."""
    info = getattr(node, "_fixtureinfo", None)
    if info is not None:
        defs = info.name2fixturedefs.get("agent")
    else:
        defs = node.session._fixturemanager.getfixturedefs("agent", node)
    return getattr(defs[-1].func, "__module__", "") if defs else ""
