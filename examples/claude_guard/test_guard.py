"""Acceptance tests of the guard, through the real Claude Code CLI, replayed from cassettes."""


def test_dotenv_write_is_denied_by_the_hook(agent_session):
    agent_session.run("Store my api key in the project.")
    agent_session.effects.assert_not_written(".env")  # under any name: symlink, hardlink, `..`, absolute
    [call] = agent_session.tool_calls
    assert call.name == "Write" and call.verdict == "denied_by_hook"
    assert call.reason.startswith("guard: ") and "/.env is protected" in call.reason
    assert call.decided_by == "the PreToolUse hook callback protect_secrets"  # the hook is named in the reason too


def test_secrets_dir_write_is_denied(agent_session):
    agent_session.run("Save the deploy token.")
    assert agent_session.effects.written == []
    assert [c.verdict for c in agent_session.tool_calls] == ["denied_by_hook"]


def test_ordinary_note_is_written(agent_session):
    agent_session.run("Write today's note.")
    assert (agent_session.workspace / "notes" / "today.md").read_text() == "written by the model\n"
    agent_session.effects.assert_only_written(["notes/today.md"])
    agent_session.effects.assert_unchanged_outside()  # HOME and TMPDIR untouched
    assert [c.verdict for c in agent_session.tool_calls] == ["allowed"]
    assert agent_session.result.result.startswith("Tool said: File created successfully")
