import pytest
from guard import make_options

from pytest_controlplane import ClaudeAgent


@pytest.fixture
def agent():
    """The agent under test: Claude Code (the real bundled CLI) with our guard."""
    return ClaudeAgent(make_options)
