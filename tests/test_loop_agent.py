"""LoopAgent: the reference loop (or the user's own) in-process, through agent_session and the gateway."""

from __future__ import annotations

CONFTEST = '''
import pytest
from pathlib import Path
from pytest_controlplane import LoopAgent

TOOLS = [{"name": "write_file", "description": "Write a file.", "input_schema": {"type": "object",
          "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}]


def tools(workspace):
    def write_file(path, content):
        target = (workspace / path).resolve()
        if target.name == ".env":
            raise PermissionError(f"{path} is protected")
        target.write_text(content)
        return f"wrote {path}"
    return {"write_file": write_file}


def forgetful_loop(messages, **kwargs):
    return "I answered but kept nothing"


@pytest.fixture
def agent(request):
    if "forgetful" in request.node.name:
        return LoopAgent(lambda ws: {}, loop=forgetful_loop)
    return LoopAgent(lambda ws: {"system": "Be brief.", "tools": TOOLS, "tool_impls": tools(ws)})
'''

TESTS = '''
import json
from pytest_controlplane import text, tool_use


def test_guarded_write(agent_session):
    call = agent_session.attempt(tool_use("write_file", {"path": ".env", "content": "KEY=1"}))
    assert not (agent_session.workspace / ".env").exists()
    assert call.verdict == "errored" and call.reason == "PermissionError: .env is protected"


def test_run_resume_fork(agent_session, scripted_model):
    agent_session.effects.watch(agent_session.world.root)  # all of it, as the escape family does
    scripted_model([tool_use("write_file", {"path": "a.txt", "content": "A"}), text("wrote a"),
                    text("still a"), text("forked")])
    agent_session.run("Write a.")
    first = agent_session.session_id
    assert (agent_session.workspace / "a.txt").read_text() == "A"
    assert [c.verdict for c in agent_session.tool_calls] == ["allowed"]
    agent_session.resume("And now?")
    assert agent_session.session_id == first and agent_session.result == "still a"
    parent = agent_session.transcript_path(first).read_bytes()
    agent_session.fork("Fork it.")
    assert agent_session.session_id != first and agent_session.result == "forked"
    assert agent_session.transcript_path(first).read_bytes() == parent
    history = agent_session.history
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant", "user", "assistant", "user",
                                            "assistant"]
    assert agent_session.requests[-1]["messages"] == history[:-1]  # the model saw the stored history
    assert agent_session.requests[0]["system"] == "Be brief."
    # the session store (outside the workspace) is the loop's own bookkeeping, not an effect of its tools
    agent_session.effects.assert_unchanged_outside()
    assert agent_session.effects.written == ["a.txt"] and agent_session.effects.bookkeeping


def test_forgetful(agent_session, scripted_model):
    scripted_model([text("unused")])
    agent_session.run("hi")
'''


def test_loop_agent_through_agent_session(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_loop=TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*SessionFormatError: The agent loop forgetful_loop returned str, not (answer, "
                                 "messages).*"])
