"""agent_session with the real Claude Code CLI: the control plane's verdict comes from what happened."""

from __future__ import annotations

import pytest

GUARDED_AGENT = '''
import os

import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, PermissionResultAllow, PermissionResultDeny
from pytest_controlplane import ClaudeAgent

GUARD = os.environ["GUARD"]  # "hook", "permission" or "none"


async def protect_env(data, tool_use_id, context):
    if data["tool_input"].get("file_path", "").endswith("/.env"):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "guard: .env is protected"}}
    return {}


async def may_use(tool_name, tool_input, context):
    if tool_input.get("file_path", "").endswith("/.env"):
        return PermissionResultDeny(message="permission: .env is protected")
    return PermissionResultAllow()


@pytest.fixture
def agent():
    def options(workspace):
        if GUARD == "hook":
            return ClaudeAgentOptions(permission_mode="acceptEdits",
                                      hooks={"PreToolUse": [HookMatcher(matcher="Write|Edit", hooks=[protect_env])]})
        if GUARD == "permission":
            return ClaudeAgentOptions(permission_mode="default", can_use_tool=may_use)
        return ClaudeAgentOptions(permission_mode="acceptEdits")
    return ClaudeAgent(options)
'''

ATTEMPT = '''
from pytest_controlplane import tool_use


def test_env_is_protected(agent_session):
    target = agent_session.workspace / ".env"
    call = agent_session.attempt(tool_use("Write", {"file_path": str(target), "content": "API_KEY=leaked"}))
    print(f"VERDICT {call.verdict} | {call.reason}")
    assert not target.exists(), f"the agent wrote .env ({call})"
    assert call.denied


def test_other_files_are_fine(agent_session):
    target = agent_session.workspace / "notes.md"
    call = agent_session.attempt(tool_use("Write", {"file_path": str(target), "content": "hello"}))
    assert target.read_text() == "hello"
    assert call.verdict == "allowed", call
'''


@pytest.mark.slow
@pytest.mark.parametrize(("guard", "verdict"), [
    ("hook", "VERDICT denied_by_hook | guard: .env is protected"),
    ("permission", "VERDICT denied_by_permission | permission: .env is protected"),
])
def test_a_guard_stops_the_write_and_the_verdict_says_which(pytester, monkeypatch, guard, verdict):
    monkeypatch.setenv("GUARD", guard)
    pytester.makeconftest(GUARDED_AGENT)
    pytester.makepyfile(test_guard=ATTEMPT)
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"*{verdict}*"])


@pytest.mark.slow
def test_without_the_guard_the_same_test_fails_on_the_effect(pytester, monkeypatch):
    monkeypatch.setenv("GUARD", "none")
    pytester.makeconftest(GUARDED_AGENT)
    pytester.makepyfile(test_guard=ATTEMPT)
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*VERDICT allowed | *", "*AssertionError: the agent wrote .env (ToolCall(Write *: "
                                 "allowed; hooks consulted: 0, callback consulted: 0))*"])


def test_default_agent_fixture_shows_how_to_define_one(pytester):
    pytester.makepyfile('''
def test_x(agent_session):
    agent_session.run("hi")
''')
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*No agent is defined for this test.*", "*from pytest_controlplane import ClaudeAgent*",
                                 "*def agent():*"])


RESUME_FORK = '''
import json
from pytest_controlplane import text


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_resume_and_fork(agent_session, scripted_model):
    scripted_model([text("first answer"), text("resumed answer"), text("forked answer")])
    agent_session.run("Remember the number 7.")
    original = agent_session.session_id
    agent_session.resume("What number?")
    assert agent_session.session_id == original
    original_file = agent_session.transcript_path(original)
    before_fork = original_file.read_bytes()

    agent_session.fork("Fork: what number?")
    forked = agent_session.session_id
    assert forked != original
    assert agent_session.transcript_path(forked).exists()
    assert original_file.read_bytes() == before_fork  # the fork wrote nothing into the original

    # The model saw the whole history on resume and on fork.
    resumed_request, forked_request = agent_session.requests[1], agent_session.requests[2]
    assert "Remember the number 7." in json.dumps(resumed_request["messages"])
    assert "resumed answer" in json.dumps(forked_request["messages"])
    texts = [e["message"]["content"] for e in agent_session.history if e.get("type") == "user"]
    assert any("Fork: what number?" in json.dumps(t) for t in texts)
    assert not any("Fork: what number?" in json.dumps(e) for e in lines(original_file))
'''


@pytest.mark.slow
def test_resume_and_fork_through_the_real_cli(pytester, monkeypatch):
    monkeypatch.setenv("GUARD", "none")
    pytester.makeconftest(GUARDED_AGENT)
    pytester.makepyfile(test_sessions=RESUME_FORK)
    pytester.runpytest().assert_outcomes(passed=1)


HANGING_AGENT = '''
import asyncio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
from pytest_controlplane import ClaudeAgent


async def hang(data, tool_use_id, context):
    await asyncio.sleep(3600)
    return {}


@pytest.fixture
def agent():
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(
        permission_mode="acceptEdits", hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[hang], timeout=3600)]}))
'''

HANGING_TEST = '''
import os
from pathlib import Path

import pytest
from pytest_controlplane import tool_use


@pytest.mark.agent(timeout=3)
def test_hangs(agent_session):
    try:
        agent_session.attempt(tool_use("Write", {"file_path": str(agent_session.workspace / "x"), "content": "y"}))
    finally:
        # No process is left running in the world once the run gave up.
        left = []
        for proc in Path("/proc").iterdir():
            try:
                if os.readlink(proc / "cwd").startswith(str(agent_session.world.root)):
                    left.append(proc.name)
            except OSError:
                pass
        print(f"LEFT RUNNING: {left}")
'''


@pytest.mark.slow
def test_a_hung_hook_times_out_with_a_clear_error_and_no_orphans(pytester):
    pytester.makeconftest(HANGING_AGENT)
    pytester.makepyfile(test_hang=HANGING_TEST)
    result = pytester.runpytest("-s")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*LEFT RUNNING: []*",
                                 "*AgentError: The Claude agent did not finish within 3 s*",
                                 "*A hook or can_use_tool that waits forever, or a tool that hangs, is the usual cause*"])


TEMPLATE_CONFTEST = '''
import pytest
from pathlib import Path
from pytest_controlplane import CommandAgent


@pytest.fixture
def agent():
    return CommandAgent(["true"])


@pytest.fixture
def agent_workspace_template():
    return Path(__file__).parent / "fixture_repo"
'''

TEMPLATE_TESTS = '''
import os
import pytest
from pytest_controlplane import text

unused = pytest.mark.agent(script=[text("unused")], allow_unused=True)


@unused
def test_fixture_template(agent_session):
    assert (agent_session.workspace / "from_fixture.txt").read_text() == "fixture"


@pytest.mark.agent(script=[text("unused")], allow_unused=True, workspace="marker_repo")
def test_marker_wins(agent_session):
    ws = agent_session.workspace
    assert sorted(os.listdir(ws)) == [".claude", "link.md", "notes.md"]
    assert os.readlink(ws / "link.md") == "notes.md"  # a symlink stays a symlink
    (ws / "notes.md").write_text("changed")


@pytest.mark.agent(script=[text("unused")], allow_unused=True, workspace="marker_repo")
def test_each_test_gets_a_fresh_copy(agent_session):
    assert (agent_session.workspace / "notes.md").read_text() == "original"


@pytest.mark.agent(script=[text("unused")], allow_unused=True, workspace="no_such_repo")
def test_missing_template(agent_session):
    pass
'''


def test_workspace_seeded_from_a_template_folder(pytester):
    (pytester.path / "fixture_repo").mkdir()
    (pytester.path / "fixture_repo" / "from_fixture.txt").write_text("fixture")
    repo = pytester.path / "marker_repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "settings.json").write_text("{}")
    (repo / "notes.md").write_text("original")
    (repo / "link.md").symlink_to("notes.md")
    pytester.makeconftest(TEMPLATE_CONFTEST)
    pytester.makepyfile(test_template=TEMPLATE_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines([f"*ConfigError: The workspace template {pytester.path}/no_such_repo is not a "
                                 "directory.*"])
    assert (repo / "notes.md").read_text() == "original"  # the template itself is never touched


BYPASS_AGENT = '''
import pytest
from claude_agent_sdk import ClaudeAgentOptions
from pytest_controlplane import ClaudeAgent


@pytest.fixture
def agent():
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(permission_mode="bypassPermissions"))
'''

BYPASS_TEST = '''
import os
import pytest
from pytest_controlplane import text, tool_use


@pytest.mark.agent(script=[tool_use("Bash", {"command": "echo uid=$(id -u) sandbox=$IS_SANDBOX > seen.txt"}),
                           text("done")])
def test_bypass(agent_session):
    agent_session.run("Note who you are.")
    assert agent_session.result.result == "done"
    assert (agent_session.workspace / "seen.txt").read_text().strip() == f"uid={os.geteuid()} sandbox=1"
'''


def test_bypass_permissions_runs_as_root_as_it_does_otherwise(pytester):
    """CI machines run as root, where the CLI refuses bypassPermissions unless IS_SANDBOX=1: every world sets it
    (the world is the sandbox), so the agent's own permission_mode works as permission_modes=[...] does."""
    pytester.makeconftest(BYPASS_AGENT)
    pytester.makepyfile(test_root_bypass=BYPASS_TEST)
    pytester.runpytest().assert_outcomes(passed=1)


ACCEPT_EDITS_AGENT = '''
import pytest
from claude_agent_sdk import ClaudeAgentOptions, PermissionResultAllow
from pytest_controlplane import ClaudeAgent


async def may_use(tool_name, tool_input, context):
    return PermissionResultAllow()


@pytest.fixture
def agent():
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(permission_mode="acceptEdits", can_use_tool=may_use))
'''

ACCEPT_EDITS_TEST = '''
from pytest_controlplane import tool_use


def test_rm(agent_session):
    (agent_session.workspace / "old.txt").write_text("x")
    call = agent_session.attempt(tool_use("Bash", {"command": "rm old.txt"}))
    print("CALL", repr(call))
    assert not (agent_session.workspace / "old.txt").exists()
'''


def test_under_accept_edits_the_cli_runs_rm_without_asking_the_callback_and_the_repr_says_so(pytester):
    pytester.makeconftest(ACCEPT_EDITS_AGENT)
    pytester.makepyfile(test_accept_edits=ACCEPT_EDITS_TEST)
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*CALL ToolCall(Bash *: allowed; hooks consulted: 0, callback consulted: 0)"])


def test_an_adapter_without_the_optional_readers_is_told_which_method_to_add(tmp_path):
    """AgentAdapter asks only for run(); history and transcript_path() need the adapter's readers, and say so."""
    from pytest_controlplane import AgentSession, ConfigError, ModelGateway, ScriptedModel, World, text

    class RunOnly:
        def run(self, prompt, **options):
            raise AssertionError("not run in this test")

    session = AgentSession(RunOnly(), World.create(tmp_path / "w"), ModelGateway(script=ScriptedModel([text("x")])))
    with pytest.raises(ConfigError, match=r"agent_session.history needs the agent's history method, and RunOnly has"):
        session.history
    with pytest.raises(ConfigError, match=r"Give RunOnly a method transcript\(world, session_id\) -> Path"):
        session.transcript_path()

