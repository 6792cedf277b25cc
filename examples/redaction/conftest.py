import pytest
from control_plane import make_options

from pytest_controlplane import ClaudeAgent


@pytest.fixture
def agent():
    """The agent under test: Claude Code (the real bundled CLI) with our redaction and shell guard."""
    return ClaudeAgent(make_options)
