import pytest


@pytest.fixture(autouse=True)
def env_file(agent_session):
    """The workspace holds the file the write and read variants are about."""
    (agent_session.workspace / ".env").write_text("API_KEY=original\n")
