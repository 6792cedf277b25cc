"""Two agents on the same repository: the repository's own (its `.claude/` settings: allow rules for curl, wget and dig,
and an exfiltration hook), and the same CLI with a default-deny guard as an SDK callback, which loads none of the
repository's settings."""

from pathlib import Path

import pytest
from exfil_guards import as_published

from pytest_controlplane import ClaudeAgent

PROJECT = Path(__file__).parent.parent / "project"


@pytest.fixture
def agent():
    """The repository's agent, as published."""
    return ClaudeAgent(as_published)


@pytest.fixture
def agent_workspace_template():
    """Each test starts in a copy of the repository, its .claude/ folder and .env included."""
    return PROJECT


def pytest_agent_audit_targets(config):
    """What the audit of these tests tries (`controlplane audit examples/exfil_guard/tests`)."""
    return ["egress collector.example"]


def pytest_agent_audit_modes(config):
    return ["default"]
