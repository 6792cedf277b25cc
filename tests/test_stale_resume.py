"""Staleness for any agent: a resumed session that answers from a tool result the world has changed since is reported
(`stale-resume`, with the file, what was read, what it holds now and the fix) for a CommandAgent (a REPL agent in a
public seed-style shape), a LoopAgent and a ClaudeAgent alike; an informed resume, a re-read and a fresh start with a
summary are quiet.  The story is the seed's: an order goes from "In Transit" to "Delivered" between two sessions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPL = Path(__file__).parent / "data" / "repl_agent.py"
CONFTEST = '''
import os
import sys
from pathlib import Path

import pytest
from pytest_controlplane import ClaudeAgent, CommandAgent, LoopAgent, tool_use

KIND = os.environ["STALE_AGENT"]
AGENT = Path(__file__).with_name("repl_agent.py")
TOOLS = [{"name": "read_file", "description": "Read a text file.", "input_schema": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]


def read_call(agent_session):
    if KIND == "claude":
        return tool_use("Read", {"file_path": str(agent_session.workspace / "orders" / "1.json")})
    return tool_use("read_file", {"path": "orders/1.json"})


@pytest.fixture
def agent():
    if KIND == "command":
        return CommandAgent(lambda session_id, resume, fork: [sys.executable, str(AGENT), resume or session_id],
                            transcript=lambda world, name: world.workspace / "sessions" / f"{name}.json",
                            stdin_end="quit\\n")
    if KIND == "loop":
        def tools(workspace):
            return {"read_file": lambda path: (workspace / path).read_text()}
        # reading_tools=(): its store knows no reading tool, so it resumes blind, as a user's own loop would
        return LoopAgent(lambda ws: {"system": "Answer about orders.", "tools": TOOLS, "tool_impls": tools(ws)},
                         reading_tools=())
    from claude_agent_sdk import ClaudeAgentOptions
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions())
'''
TESTS = '''
from conftest import read_call
from pytest_controlplane import text


def first_session(agent_session, scripted_model, *later):
    (agent_session.workspace / "orders").mkdir()
    order = agent_session.workspace / "orders" / "1.json"
    order.write_text('{"id": 1, "status": "In Transit"}\\n')
    scripted_model([read_call(agent_session), text("Order 1 is In Transit."), *later])
    agent_session.run("Where is order 1?")
    order.write_text('{"id": 1, "status": "Delivered"}\\n')  # the world changes between the sessions


def test_blind(agent_session, scripted_model):
    first_session(agent_session, scripted_model, text("It is still In Transit."))
    agent_session.resume("Has it arrived yet?")
    agent_session.assert_not_stale()


def test_informed(agent_session, scripted_model):
    first_session(agent_session, scripted_model, text("Yes, it was delivered."))
    agent_session.resume("Note: orders/1.json has changed since: its status is Delivered now. Has it arrived yet?")
    agent_session.assert_not_stale()


def test_read_again(agent_session, scripted_model):
    first_session(agent_session, scripted_model, read_call(agent_session), text("Yes, it was delivered."))
    agent_session.resume("Has it arrived yet?")
    agent_session.assert_not_stale()


def test_fresh_with_a_summary(agent_session, scripted_model):
    first_session(agent_session, scripted_model, text("Yes, it was delivered."))
    agent_session.run("Summary of an earlier session: the user asked where order 1 is. Has it arrived yet?")
    agent_session.assert_not_stale()
'''


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["command", "loop", "claude"])
def test_a_blind_resume_is_stale_and_an_informed_one_is_not(pytester, monkeypatch, kind):
    shutil.copy(REPL, pytester.path / "repl_agent.py")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_orders=TESTS)
    monkeypatch.setenv("STALE_AGENT", kind)
    result = pytester.runpytest("-p", "no:randomly", "-rA")
    result.stdout.fnmatch_lines([
        "*HistoryInconsistent: The resumed session answered from what it read before the world changed:",
        "*message #*: stale-resume: the resumed session carries the * result of orders/1.json as it was read (*In "
        "Transit*), and orders/1.json has changed since (now *Delivered*); the resumed run neither read it again nor "
        "was told. Fix: tell the resumed session what changed (the seed's inform_of_change), have it read "
        "orders/1.json again, or start fresh with a summary (start_fresh_with_summary).",
    ])
    assert [line.split()[1] for line in result.outlines if line.startswith("FAILED ")] == ["test_orders.py::test_blind"]
    result.assert_outcomes(passed=3, failed=1)


def test_a_message_list_checked_against_its_world_is_stale_until_the_file_agrees(tmp_path):
    """check_history(messages, world=...) reads the list's last prompt as the resume; the same list is quiet once the
    file holds what was read again, or with no world to check against."""
    from pytest_controlplane import check_history

    (tmp_path / "orders").mkdir()
    order = tmp_path / "orders" / "1.json"
    messages = [
        {"role": "user", "content": "Where is order 1?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file",
                                           "input": {"path": "orders/1.json"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": '{"status": "In Transit"}'}]},
        {"role": "assistant", "content": [{"type": "text", "text": "In Transit."}]},
        {"role": "user", "content": "Has it arrived yet?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Still In Transit."}]},
    ]
    order.write_text('{"status": "Delivered"}')
    [problem] = check_history(messages, world=tmp_path)
    assert (problem.kind, problem.line) == ("stale-resume", 2) and "now '{\"status\": \"Delivered\"}'" in problem.message
    assert check_history(messages) == []
    order.write_text('{"status": "In Transit"}')
    assert check_history(messages, world=tmp_path) == []
    informed = [*messages[:4], {"role": "user", "content": "orders/1.json changed."}, *messages[4:]]
    order.write_text('{"status": "Delivered"}')
    assert check_history(informed, world=tmp_path) == []  # and a note followed by the question is no warning
