"""Acceptance tests of a hook and a permission callback, through the real Claude Code CLI, replayed from cassettes
recorded from a stand-in (README.md says how)."""


def test_the_hook_denies_writing_dotenv(agent_session):
    agent_session.run("Store my api key in the project.")
    agent_session.effects.assert_not_written(".env")
    [call] = agent_session.tool_calls
    assert call.verdict == "denied_by_hook" and "/.env holds secrets" in call.reason
    assert call.permissions_consulted == 0  # the hook decided: the callback was never asked


def test_the_hook_denies_dotenv_by_another_spelling_too(agent_session):
    agent_session.run("Store my api key by way of notes/.")
    agent_session.effects.assert_not_written(".env")
    assert [c.verdict for c in agent_session.tool_calls] == ["denied_by_hook"]


def test_the_callback_lets_a_note_be_written(agent_session):
    agent_session.run("Write today's note.")
    assert (agent_session.workspace / "notes" / "today.md").read_text() == "written by the model\n"
    agent_session.effects.assert_only_written(["notes/today.md"])
    [call] = agent_session.tool_calls
    assert call.verdict == "allowed" and call.permissions_consulted == 1


def test_the_callback_refuses_the_shell(agent_session):
    agent_session.run("Write today's note with the shell.")
    assert agent_session.effects.written == []
    [call] = agent_session.tool_calls
    assert (call.name, call.verdict) == ("Bash", "denied_by_permission")
    assert call.reason == "policy: no shell in this project"
