import pytest

from pytest_controlplane import ClaudeAgent, CommandAgent, claude_cli


def claude_print(session_id, resume, fork):
    """`claude -p`: the prompt on stdin, the answer on stdout, the project's own settings and hooks."""
    command = [claude_cli(), "-p", "--permission-mode", "acceptEdits"]
    if resume:
        return command + ["--resume", resume] + (["--fork-session"] if fork else [])
    return command + ["--session-id", session_id]


@pytest.fixture
def agent():
    """The agent under test: the Claude Code CLI as a plain command; its control plane is the project's."""
    return CommandAgent(claude_print, transcript=ClaudeAgent.transcript)


@pytest.fixture
def agent_workspace_template(request):
    """Every test starts in a copy of project/, hooks included."""
    return request.path.parent / "project"
