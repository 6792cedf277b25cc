"""CommandAgent: an agent that is just a process honouring ANTHROPIC_BASE_URL, judged from outside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# An agent in no SDK at all: urllib, its own tool loop and its own guard.  It also reports the
# world it found itself in, so the test can check what the process was given.
SCRIPT_AGENT = r'''#!/usr/bin/env python3
import json, os, pathlib, sys, urllib.request

prompt = sys.stdin.read()
pathlib.Path("seen.json").write_text(json.dumps({
    "prompt": prompt, "cwd": os.getcwd(), "home": os.environ["HOME"], "tmp": os.environ["TMPDIR"],
    "key": os.environ["ANTHROPIC_API_KEY"], "leaked": os.environ.get("PARENT_SECRET")}))
tools = [{"name": "write_file", "description": "Write a file.", "input_schema": {
    "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}]
messages = [{"role": "user", "content": prompt}]
while True:
    request = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
        data=json.dumps({"model": "claude-x", "max_tokens": 256, "tools": tools, "messages": messages}).encode(),
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01",
                 "content-type": "application/json"})
    reply = json.load(urllib.request.urlopen(request))
    messages.append({"role": "assistant", "content": reply["content"]})
    calls = [block for block in reply["content"] if block["type"] == "tool_use"]
    if not calls:
        print("".join(block.get("text", "") for block in reply["content"]))
        break
    results = []
    for call in calls:
        path = pathlib.Path(call["input"]["path"])
        if GUARDED and path.name == ".env":
            results.append({"type": "tool_result", "tool_use_id": call["id"], "is_error": True,
                            "content": "refused: .env is protected"})
        else:
            path.write_text(call["input"]["content"])
            results.append({"type": "tool_result", "tool_use_id": call["id"], "content": f"wrote {path}"})
    messages.append({"role": "user", "content": results})
'''

CONFTEST = '''
import os, sys
from pathlib import Path

import pytest
from pytest_controlplane import CommandAgent

HERE = Path(__file__).parent


@pytest.fixture
def agent():
    return CommandAgent([sys.executable, str(HERE / "script_agent.py")], env={"AGENT_FLAVOUR": "plain"})
'''

TESTS = '''
import json
import os
from pytest_controlplane import text, tool_use


def test_env_is_protected(agent_session):
    target = agent_session.workspace / ".env"
    call = agent_session.attempt(tool_use("write_file", {"path": str(target), "content": "KEY=leaked"}))
    print(f"VERDICT {call.verdict} | {call.reason}")
    assert not target.exists(), f"the agent wrote .env ({call})"


def test_notes_are_written_and_the_process_saw_a_hermetic_world(agent_session, scripted_model, monkeypatch):
    monkeypatch.setenv("PARENT_SECRET", "should-not-reach-the-agent")
    target = agent_session.workspace / "notes.md"
    scripted_model([tool_use("write_file", {"path": "notes.md", "content": "hello"}), text("all done")])
    outcome = agent_session.run("Write a note, please.")
    assert target.read_text() == "hello"
    assert [c.verdict for c in agent_session.tool_calls] == ["allowed"]
    assert agent_session.tool_calls[0].result == "wrote notes.md"
    assert agent_session.result == "all done"
    seen = json.loads((agent_session.workspace / "seen.json").read_text())
    world = agent_session.world
    assert seen == {"prompt": "Write a note, please.", "cwd": str(world.workspace), "home": str(world.home),
                    "tmp": str(world.tmp), "key": "sk-ant-controlplane-dummy-key", "leaked": None}
    assert agent_session.requests[0]["messages"][0]["content"] == "Write a note, please."
'''


@pytest.fixture
def script_agent(pytester):
    def make(guarded: bool) -> None:
        pytester.path.joinpath("script_agent.py").write_text(SCRIPT_AGENT.replace("GUARDED", str(guarded)))
        pytester.makeconftest(CONFTEST)
        pytester.makepyfile(test_agent=TESTS)
    return make


def test_a_command_agents_own_guard_is_judged_from_outside(pytester, script_agent, monkeypatch):
    monkeypatch.delenv("PARENT_SECRET", raising=False)
    script_agent(guarded=True)
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*VERDICT errored | refused: .env is protected*"])


def test_without_its_guard_the_command_agent_fails_on_the_effect(pytester, script_agent, monkeypatch):
    monkeypatch.delenv("PARENT_SECRET", raising=False)
    script_agent(guarded=False)
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*VERDICT allowed | *", "*AssertionError: the agent wrote .env (ToolCall(write_file *"])


# The Claude Code CLI itself as a command: its control plane is the project's .claude/settings.json,
# a shell hook, seeded into the workspace from a template folder (here: our own hook, with and without it).
GUARD_SH = """#!/bin/sh
input=$(cat)
case "$input" in
  *'/.env"'*) echo "guard.sh: .env is protected" >&2; exit 2 ;;
esac
exit 0
"""

SETTINGS = {"hooks": {"PreToolUse": [{"matcher": "Write|Edit|Bash", "hooks": [
    {"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/guard.sh'}]}]}}

# The example's own conftest: `claude -p` as a CommandAgent, the workspace a copy of ./project.
CLI_CONFTEST = (Path(__file__).parent.parent / "examples" / "project_hooks" / "conftest.py").read_text()

CLI_TESTS = '''
from pytest_controlplane import text, tool_use


def test_env_is_protected_by_the_project_hook(agent_session):
    assert (agent_session.workspace / "README.md").read_text() == "a project"  # seeded from the template
    target = agent_session.workspace / ".env"
    call = agent_session.attempt(tool_use("Write", {"file_path": str(target), "content": "KEY=leaked"}))
    print(f"VERDICT {call.verdict} | {call.reason}")
    assert not target.exists(), f"the CLI wrote .env ({call})"


def test_resume_through_the_command(agent_session, scripted_model):
    scripted_model([text("noted"), text("it was 7")])
    agent_session.run("Remember 7.")
    first = agent_session.session_id
    agent_session.resume("Which number?")
    assert agent_session.session_id == first
    assert agent_session.result == "it was 7"
    prompts = [str(e["message"]["content"]) for e in agent_session.history if e.get("type") == "user"]
    assert any("Remember 7." in p for p in prompts) and any("Which number?" in p for p in prompts)
'''


@pytest.mark.slow
@pytest.mark.parametrize("hook", [True, False], ids=["with-hook", "hook-removed"])
def test_claude_cli_as_a_command_with_project_hooks_from_a_template(pytester, hook):
    claude_dir = pytester.path / "project" / ".claude"
    claude_dir.mkdir(parents=True)
    (pytester.path / "project" / "README.md").write_text("a project")
    guard = claude_dir / "guard.sh"
    guard.write_text(GUARD_SH)
    guard.chmod(0o755)
    if hook:
        (claude_dir / "settings.json").write_text(json.dumps(SETTINGS))
    pytester.makeconftest(CLI_CONFTEST)
    pytester.makepyfile(test_cli=CLI_TESTS)
    result = pytester.runpytest("-s")
    if hook:
        result.assert_outcomes(passed=2)
        # The project's command hook ran through the recorder: its deny is credited to it, named, from outside too.
        result.stdout.fnmatch_lines(
            ["*VERDICT denied_by_hook | guard.sh: .env is protected (the PreToolUse command hook `*guard.sh` "
             "(.claude/settings.json))*"]
        )
    else:
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(["*AssertionError: the CLI wrote .env (ToolCall(Write *: allowed; consulted: cannot tell)*"])
