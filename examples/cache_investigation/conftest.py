import shutil
from pathlib import Path

import anthropic
import pytest
from cache_agent import loop_options

from pytest_controlplane import SessionStore

PROJECT = Path(__file__).parent / "project"


@pytest.fixture
def project(tmp_path):
    """A fresh copy of the project under investigation."""
    return Path(shutil.copytree(PROJECT, tmp_path / "project"))


@pytest.fixture
def store(tmp_path, project):
    """The session store; the files sessions read are resolved in the project."""
    return SessionStore(tmp_path / "sessions", root=project)


@pytest.fixture
def agent_kwargs(model_gateway, project, store):
    """What resume_session / start_fresh_with_summary need to run the agent against this test's model."""
    client = anthropic.Anthropic(base_url=model_gateway.base_url, api_key="unused-in-replay", max_retries=0)
    return {"store": store, "client": client, **loop_options(project)}
