"""The texts a user sees when something is wrong: what happened and the exact fix.

Replay never writes a cassette, whatever goes wrong.
"""

from __future__ import annotations

import os
import stat

import pytest
import yaml


AGENT = '''
import os
import anthropic
import pytest


def ask(gateway, prompt, user_agent=None):
    headers = {"User-Agent": user_agent} if user_agent else {}
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-agent-dummy", max_retries=0,
                                 default_headers=headers)
    reply = client.messages.create(model="claude-opus-5-5", max_tokens=64,
                                   messages=[{"role": "user", "content": prompt}])
    return reply.content[0].text


def test_ask(model_gateway):
    for prompt in os.environ.get("PROMPTS", "What is 2+2?").split("|"):
        try:
            answer = ask(model_gateway, prompt, os.environ.get("AGENT_UA"))
        except anthropic.PermissionDeniedError as error:
            # The agent gets a non-retryable 403 naming the gateway; the test failure has the details.
            assert error.status_code == 403 and "pytest-controlplane" in str(error)
            return
        assert answer == "4"
'''

CASSETTE = "cassettes/test_ask/test_ask.yaml"


@pytest.fixture
def record(pytester, monkeypatch):
    """Record test_ask.py's cassette from a scripted stand-in API that always answers "4"."""
    pytester.makepyfile(test_ask=AGENT, model="from pytest_controlplane import text\nMODEL = lambda request: text('4')\n")

    def run(prompts: str = "What is 2+2?", user_agent: str | None = None) -> None:
        monkeypatch.setenv("PROMPTS", prompts)
        if user_agent:
            monkeypatch.setenv("AGENT_UA", user_agent)
        pytester.runpytest("--agent-mode=record", "--agent-script", "model.py:MODEL").assert_outcomes(passed=1)
        monkeypatch.delenv("AGENT_UA", raising=False)

    return run


def test_missing_cassette_says_how_to_record(pytester):
    pytester.makepyfile(test_ask=AGENT)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*CassetteNotFound: Cassette */cassettes/test_ask/test_ask.yaml does not exist, and replay mode never "
        "calls the real model (the agent sent POST /v1/messages)*",
        "*Record it: pytest --agent-mode=record 'test_ask.py::test_ask'*",
    ])
    assert not (pytester.path / "cassettes").exists()


def test_a_recorded_cassette_has_the_users_umask_not_0600(pytester, record):
    old = os.umask(0o022)
    try:
        record()
    finally:
        os.umask(old)
    assert stat.S_IMODE((pytester.path / CASSETTE).stat().st_mode) == 0o644


@pytest.mark.parametrize("factory", ["lambda: ClaudeAgentOptions()", "make_options"])
def test_an_options_factory_that_cannot_take_the_workspace_says_how_to_write_it(pytester, factory):
    pytester.makeconftest(f'''
import pytest
from claude_agent_sdk import ClaudeAgentOptions
from pytest_controlplane import ClaudeAgent


def make_options(*, permission_mode="acceptEdits"):
    return ClaudeAgentOptions(permission_mode=permission_mode)


@pytest.fixture
def agent():
    return ClaudeAgent({factory})
''')
    pytester.makepyfile("def test_x(agent_session):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*ConfigError: ClaudeAgent(options_factory): the factory is called with the test's workspace (a Path), but *"
        "cannot take it.",
        "*Write it as `lambda workspace: ClaudeAgentOptions(...)` (ignore the argument if you do not need it).",
    ])
    assert "TypeError" not in result.stdout.str() and "world.py" not in result.stdout.str()


def test_recorded_cassette_says_where_it_came_from(pytester, record):
    record()
    data = yaml.safe_load((pytester.path / CASSETTE).read_text())
    meta = data["metadata"]["controlplane"]
    assert meta["source"] == "scripted model (pytest_controlplane.ScriptedModel served as a stand-in API), not Claude"
    assert meta["claude_cli_version"] is None and meta["agent_sdk_version"] is None  # no CLI, no SDK said so
    pytester.runpytest().assert_outcomes(passed=1)  # and it replays


def test_replay_miss_shows_a_diff_against_the_closest_recording(pytester, record, monkeypatch):
    record()
    before = (pytester.path / CASSETTE).read_bytes()
    monkeypatch.setenv("PROMPTS", "What is 3+3?")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*ReplayMiss: Request #1 (POST /v1/messages) matches no unplayed interaction of cassette "
        "*test_ask.yaml (1 recorded, 0 played); closest recorded request: interaction #0.",
        "Diff (recorded -> sent now, normalised):",
        "*--- recorded interaction #0",
        "*+++ request sent now",
        '*-*"content": "What is 2+2?",',
        '*+*"content": "What is 3+3?",',
        "*If the agent changed on purpose, re-record: pytest --agent-mode=record --agent-script model.py:MODEL "
        "'test_ask.py::test_ask'",
    ])
    assert (pytester.path / CASSETTE).read_bytes() == before


def test_corrupt_cassette_fails_before_the_agent_runs_and_is_not_touched(pytester, record):
    record()
    path = pytester.path / CASSETTE
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    truncated = path.read_bytes()
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*Cassette */test_ask.yaml cannot be loaded: *",
        f"*Restore it (`git checkout -- */{CASSETTE}`), or record it again: pytest --agent-mode=record 'test_ask.py::"
        "test_ask' (with ANTHROPIC_API_KEY set)",  # its metadata cannot be read: the file is cut in half
    ])
    assert path.read_bytes() == truncated
    # One message, with the error's class; not once more as "During handling of the above exception".
    assert len([line for line in result.stdout.lines if line.startswith("CassetteCorrupt: ")]) == 1
    result.stdout.fnmatch_lines(["*CassetteCorrupt: Cassette */test_ask.yaml cannot be loaded*"])
    assert "During handling" not in result.stdout.str() and "direct cause" not in result.stdout.str()


MISSING_IN_SESSION = '''
import sys
import pytest
from pytest_controlplane import CommandAgent


@pytest.fixture
def agent():
    return CommandAgent([sys.executable, "-c", "import anthropic, os; anthropic.Anthropic(max_retries=0).messages.create("
                         "model='m', max_tokens=8, messages=[{'role': 'user', 'content': 'hi'}])"])


def test_ask(agent_session):
    agent_session.run("hello")
'''


def test_an_error_of_ours_shows_its_class_and_the_tests_line_not_our_frames(pytester):
    pytester.makepyfile(test_ask=MISSING_IN_SESSION)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        ">       agent_session.run(\"hello\")",
        "E       pytest_controlplane.errors.CassetteNotFound: Cassette */test_ask/test_ask.yaml does not exist*",
        "E       Record it: pytest --agent-mode=record 'test_ask.py::test_ask' (with ANTHROPIC_API_KEY set)",
    ], consecutive=True)
    output = result.stdout.str()
    assert "session.py" not in output and "backends.py" not in output and "server.py" not in output
    # and the summary says the cassette is missing, not "0 miss(es)"
    result.stdout.fnmatch_lines([
        "test_ask.py::test_ask: 1 turn(s), 0+0 tokens, cassette missing, recorded 0, mode replay",
        "total: 1 agent test(s), 1 turn(s), 0+0 tokens, cassette 0 hit(s) / 0 miss(es) / 0 unused, 1 cassette(s) "
        "missing, recorded 0",
    ])


def test_cassette_from_another_cli_version_fails_clearly(pytester, record, monkeypatch):
    record(user_agent="claude-cli/2.1.332 (external, sdk-py)")
    assert yaml.safe_load((pytester.path / CASSETTE).read_text())["metadata"]["controlplane"][
        "claude_cli_version"] == "2.1.332"
    monkeypatch.setenv("AGENT_UA", "claude-cli/2.1.400 (external, sdk-py)")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*CassetteVersionMismatch: Cassette *test_ask.yaml was recorded with Claude Code CLI 2.1.332, but this run "
        "uses CLI 2.1.400; its prompts differ, so its requests cannot match.",
        "*Re-record it: pytest --agent-mode=record --agent-script model.py:MODEL 'test_ask.py::test_ask' — or, to "
        "replay it as it is, pin claude-agent-sdk==0.2.189 (pip install 'claude-agent-sdk==0.2.189': it bundles CLI "
        "2.1.332), or run that CLI: --agent-cli 2.1.332 (controlplane cli install 2.1.332).",
    ])
    assert "dev extra" not in result.stdout.str()
    monkeypatch.setenv("AGENT_UA", "claude-cli/2.1.332 (external, sdk-py)")
    pytester.runpytest().assert_outcomes(passed=1)


def test_unplayed_interactions_fail_at_teardown(pytester, record, monkeypatch):
    record(prompts="What is 2+2?|And 1+3?")
    monkeypatch.setenv("PROMPTS", "What is 2+2?")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*UnusedInteractions: Cassette *test_ask.yaml has 1 interaction(s) the agent never asked for (#1 of 2)*",
        "*`@pytest.mark.agent(allow_unused=True)`*",
    ])


@pytest.mark.parametrize("mode", ["record", "live", "auto"])
def test_a_request_that_would_go_upstream_without_a_key_is_refused_and_says_how(pytester, mode):
    pytester.makepyfile(test_ask=AGENT)
    result = pytester.runpytest(f"--agent-mode={mode}")
    result.assert_outcomes(passed=1, errors=1)  # the agent gets the refusal; the test fails at teardown
    result.stdout.fnmatch_lines([
        f"*MissingApiKey: {mode} mode sends request #1 to https://api.anthropic.com, which needs an API key, and "
        "ANTHROPIC_API_KEY is not set.",
        "*Set ANTHROPIC_API_KEY, or run from the cassettes with `--agent-mode=replay`.",
    ])
    assert not (pytester.path / "cassettes").exists()


SCRIPTED_ONLY = '''
import anthropic
import pytest
from pytest_controlplane import text


@pytest.mark.agent(script=[text("4")])
def test_scripted(model_gateway):
    client = anthropic.Anthropic(base_url=model_gateway.base_url, api_key="k", max_retries=0)
    assert client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "2+2"}]
                                  ).content[0].text == "4"
'''


@pytest.mark.parametrize("mode", ["record", "auto", "live"])
def test_tests_that_never_call_the_api_need_no_key(pytester, mode):
    """Scripted tests (attempt(), bypass_variants, crash_everywhere are scripted too) run in any mode without a key."""
    pytester.makepyfile(test_scripted=SCRIPTED_ONLY)
    pytester.runpytest(f"--agent-mode={mode}").assert_outcomes(passed=1)


def test_auto_with_every_cassette_present_needs_no_key(pytester, record):
    record()
    before = (pytester.path / CASSETTE).read_bytes()
    pytester.runpytest("--agent-mode=auto").assert_outcomes(passed=1)
    assert (pytester.path / CASSETTE).read_bytes() == before


@pytest.mark.parametrize(("marker", "message"), [
    ('casette="x.yaml"', "*@pytest.mark.agent got unknown argument(s) casette; accepted: cassette, mode, script, "
                         "allow_unused, timeout, workspace, record_errors, network, cli — agent(cassette=None, "
                         "mode=None, script=None, allow_unused=False, timeout=None, workspace=None, "
                         "record_errors=False, network=False, cli=None).*"),
    ('"x.yaml"', "*@pytest.mark.agent takes keyword arguments only: agent(cassette=None, *; got positional ('x.yaml',).*"),
    ('mode="replayy"', "*@pytest.mark.agent(mode=...): unknown agent mode 'replayy'; valid modes: replay, record, "
                       "auto, live.*"),
    ("allow_unused=1", "*@pytest.mark.agent(allow_unused=...) takes True or False, got 1.*"),
    ("record_errors='yes'", "*@pytest.mark.agent(record_errors=...) takes True or False, got 'yes'.*"),
    ("timeout=0", "*@pytest.mark.agent(timeout=...) takes seconds (a positive number), got 0.*"),
    ("workspace=3", "*@pytest.mark.agent(workspace=...) takes a path, got 3.*"),
])
def test_bad_marker_arguments_list_what_is_accepted(pytester, marker, message):
    pytester.makepyfile(f'''
import pytest

@pytest.mark.agent({marker})
def test_x(model_gateway):
    pass
''')
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])


def test_bad_mode_from_env_is_a_usage_error(pytester, monkeypatch):
    pytester.makepyfile("def test_x(): pass")
    monkeypatch.setenv("CONTROLPLANE_MODE", "bogus")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*$CONTROLPLANE_MODE: unknown agent mode 'bogus'; valid modes: replay, record, auto, "
                                 "live.*"])


def test_bad_mode_on_the_command_line_lists_the_choices(pytester):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--agent-mode=recrod")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agent-mode: invalid choice: 'recrod' (choose from *replay*record*auto*live*)*"])


SCRIPTED = '''
import anthropic
from pytest_controlplane import text


def ask(gateway, n):
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
    for _ in range(n):
        client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])


def test_too_few_turns(model_gateway, scripted_model):
    scripted_model([text("one")])
    try:
        ask(model_gateway, 2)
    except anthropic.PermissionDeniedError:
        pass


def test_too_many_turns(model_gateway, scripted_model):
    scripted_model([text("one"), text("two"), text("three")])
    ask(model_gateway, 1)
'''


def test_scripted_model_turn_accounting(pytester):
    pytester.makepyfile(test_scripted=SCRIPTED)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines_random([
        "*ScriptExhausted: The scripted model has 1 turn(s) and all were served; the agent sent request #2 asking "
        "for another.*",
        "*UnusedScriptTurns: The scripted model still has 2 turn(s) the agent never asked for (it served 1).*",
    ])


def test_a_callback_that_raised_is_reported_before_the_replay_miss_it_caused():
    """In replay a hook that raises changes what the agent sends next, so the run also misses the cassette: the raised
    error is the news, the miss its consequence (it was the other way round, and the hook's error was never shown).
    The twin: with no callback error, the miss is what is raised."""
    from pytest_controlplane.agents.outcome import RunOutcome, raise_for
    from pytest_controlplane.errors import AgentError, ReplayMiss

    miss = ReplayMiss("No recorded response matches request #2 (POST /v1/messages).\nthe diff", request=None)
    outcome = RunOutcome()
    outcome.callback_errors = ["PreToolUse hook guard raised KeyError: 'tool_input'"]
    with pytest.raises(AgentError) as raised:
        raise_for(outcome, miss, answered=True)
    assert str(raised.value).startswith("A control-plane callback raised during the run (the SDK swallows these): "
                                        "PreToolUse hook guard raised KeyError: 'tool_input'\nWhat followed, most "
                                        "likely because of it: ReplayMiss: No recorded response matches request #2")
    with pytest.raises(ReplayMiss):
        raise_for(RunOutcome(), miss, answered=True)


HOOKED_AGENT = '''
import os

import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

from pytest_controlplane import ClaudeAgent


async def guard(input_data, tool_use_id, context):
    if os.environ.get("BREAK_THE_HOOK"):
        input_data["tool_input"]["no_such_key"]  # a slip in the user's hook: KeyError, and nothing decided
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "notes are read-only"}}


@pytest.fixture
def agent():
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(
        permission_mode="acceptEdits", hooks={"PreToolUse": [HookMatcher(matcher="Write", hooks=[guard])]}))


def test_note(agent_session):
    agent_session.run("Write the note.")
    assert not (agent_session.workspace / "note.md").exists()
'''

HOOKED_MODEL = '''
from pytest_controlplane import ScriptedModel, text, tool_use

MODEL = ScriptedModel(lambda request: text("Written.") if request.tool_results else
                      tool_use("Write", {"file_path": "note.md", "content": "hi"}))
'''


@pytest.mark.slow
def test_a_hook_that_raises_in_replay_is_reported_as_itself(pytester, monkeypatch):
    """Replay of a ClaudeAgent whose guard now raises before it denies: the write runs, so the run's next request
    differs from the recording and misses the cassette; the hook's own error is what the test reports, the miss
    after it.  The twin: the hook as recorded replays and passes."""
    pytester.makepyfile(test_hooked=HOOKED_AGENT, model=HOOKED_MODEL)
    pytester.runpytest("--agent-mode=record", "--agent-script", "model.py:MODEL").assert_outcomes(passed=1)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    monkeypatch.setenv("BREAK_THE_HOOK", "1")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E   *AgentError: A control-plane callback raised during the run (the SDK swallows "
                                 "these): *KeyError: 'no_such_key'*"])
    result.stdout.fnmatch_lines(["E   *What followed, most likely because of it: ReplayMiss: *"])
