import os

import pytest
from guard import GUARDS

from pytest_controlplane import ClaudeAgent


@pytest.fixture
def agent():
    """The agent under test: Claude Code (the real bundled CLI) with our guard.

    CLAUDE_GUARD picks another guard for an audit (`CLAUDE_GUARD=naive controlplane audit examples/claude_guard`):
    hardened (the default), naive or deny-all."""
    name = os.environ.get("CLAUDE_GUARD", "hardened")
    if name not in GUARDS:
        pytest.fail(f"CLAUDE_GUARD={name!r}: choose one of {', '.join(GUARDS)}.", pytrace=False)
    return ClaudeAgent(GUARDS[name])
