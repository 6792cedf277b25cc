import pytest


@pytest.fixture
def agent_workspace_template(request):
    """Every test starts in a copy of project/: a .env to protect and scripts/deploy.sh that must not run."""
    return request.path.parent / "project"
