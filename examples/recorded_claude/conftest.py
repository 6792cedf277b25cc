import pytest
from dotenv_policy import make_options

from pytest_controlplane import ClaudeAgent


@pytest.fixture
def agent():
    """The agent under test: Claude Code (the real bundled CLI) with our hook and permission callback."""
    return ClaudeAgent(make_options)
