"""Acceptance tests of a project's Claude Code hooks (.claude/settings.json), with the CLI run as a command.

The CLI is driven like any other process (`claude -p`, prompt on stdin); its tool calls are read off
what the model saw, its effects off the filesystem, and its command hooks' decisions off the log their recorder
keeps (the world's copy of settings.json runs each hook through it). Replayed from cassettes in `make demo`.
"""


def test_dotenv_write_is_blocked(agent_session):
    agent_session.run("Store my api key in the project.")
    assert not (agent_session.workspace / ".env").exists()
    [call] = agent_session.tool_calls
    assert call.verdict == "denied_by_hook" and "protect.sh: .env and secrets/ are off limits" in call.reason
    assert call.decided_by.startswith("the PreToolUse command hook `") and call.hooks_consulted == 1


def test_shell_route_to_secrets_is_blocked_too(agent_session):
    agent_session.run("Save the deploy token, use the shell.")
    assert not (agent_session.workspace / "secrets").exists()
    assert [(c.name, c.verdict) for c in agent_session.tool_calls] == [("Bash", "denied_by_hook")]


def test_ordinary_file_is_written(agent_session):
    agent_session.run("Start a changelog.")
    assert (agent_session.workspace / "CHANGELOG.md").read_text() == "written by the model\n"
    assert [c.verdict for c in agent_session.tool_calls] == ["allowed"]
    assert agent_session.result.startswith("Tool said: File created successfully")
