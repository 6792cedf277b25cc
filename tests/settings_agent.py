"""The conftest of a pytester suite whose agent is the Claude Code CLI with a repository's own project settings, under
bypassPermissions (only the settings' hooks and rules decide), its workspace a folder of the suite (`template`: a
Python expression of `request`, the folder's name under the rootdir)."""

from __future__ import annotations


def conftest(template: str = '"repo"') -> str:
    return f"""
import pytest
from claude_agent_sdk import ClaudeAgentOptions
from pytest_controlplane import ClaudeAgent


@pytest.fixture
def agent():
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(permission_mode="bypassPermissions",
                                                            setting_sources=["project"]))


@pytest.fixture
def agent_workspace_template(request):
    return request.config.rootpath / {template}
"""
