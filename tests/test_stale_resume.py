"""Staleness for any agent: a resumed session that answers from a tool result whose source the world has changed
since is reported (`stale-resume`, with the file, what was read, what it holds now and the fix) for a CommandAgent (a
REPL agent in a public seed-style shape), a LoopAgent and a ClaudeAgent alike.  A result's sources are the files the
agent's processes read while its call ran (and those declared for its tool); a resume is told by the new content or a
note of the change, not by the file's name; a re-read and a fresh start with a summary are quiet.  The story is the
seed's: an order goes from "In Transit" to "Delivered" between two sessions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPL = Path(__file__).parent / "data" / "repl_agent.py"
CONFTEST = '''
import json
import os
import sys
from pathlib import Path

import pytest
from pytest_controlplane import ClaudeAgent, CommandAgent, LoopAgent, tool_use

KIND = os.environ["STALE_AGENT"]
AGENT = Path(__file__).with_name("repl_agent.py")
OWN_FILE = "CLAUDE.md" if KIND == "claude" else "system.txt"  # the agent reads it for itself as it starts
TOOLS = [{"name": "get_order", "description": "Look an order up by its id.", "input_schema": {
             "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
         {"name": "write_file", "description": "Write a text file.", "input_schema": {
             "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
             "required": ["path", "content"]}}]


def get_order_call():
    """A call that reads orders.json, its input naming no file."""
    if KIND == "claude":
        return tool_use("Bash", {"command": "jq -c '.\\"1\\"' orders.json"})
    return tool_use("get_order", {"order_id": "1"})


def write_call(agent_session):
    if KIND == "claude":
        return tool_use("Write", {"file_path": str(agent_session.workspace / "notes.txt"), "content": "Call Asha."})
    return tool_use("write_file", {"path": "notes.txt", "content": "Call Asha."})


def loop_tools(workspace):
    def get_order(order_id):
        return json.dumps(json.loads((workspace / "orders.json").read_text())[order_id])

    def write_file(path, content):
        (workspace / path).write_text(content)
        return f"wrote {path}"

    return {"get_order": get_order, "write_file": write_file}


@pytest.fixture
def agent():
    if KIND == "command":
        return CommandAgent(lambda session_id, resume, fork: [sys.executable, str(AGENT), resume or session_id],
                            transcript=lambda world, name: world.workspace / "sessions" / f"{name}.json",
                            stdin_end="quit\\n")
    if KIND == "loop":
        # reading_tools=(): its store knows no reading tool, so it resumes blind, as a user's own loop would
        return LoopAgent(lambda ws: {"system": (ws / OWN_FILE).read_text(), "tools": TOOLS,
                                     "tool_impls": loop_tools(ws)}, reading_tools=())
    from claude_agent_sdk import ClaudeAgentOptions
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(permission_mode="acceptEdits"))
'''
TESTS = '''
import pytest
from conftest import OWN_FILE, get_order_call, write_call
from pytest_controlplane import text

ORDERS = \'{"1": {"item": "lamp", "status": "%s"}, "2": {"item": "desk", "status": "Pending"}}\\n\'


def first_session(agent_session, scripted_model, *later, first=None):
    """Where is order 1? The agent looks it up (In Transit); then the order is delivered."""
    (agent_session.workspace / "orders.json").write_text(ORDERS % "In Transit")
    (agent_session.workspace / OWN_FILE).write_text("You answer questions about orders.\\n")
    scripted_model([*(first or [get_order_call()]), text("Order 1 is In Transit."), *later])
    agent_session.run("Where is order 1?")


def deliver(agent_session):
    (agent_session.workspace / "orders.json").write_text(ORDERS % "Delivered")


def test_blind(agent_session, scripted_model):
    first_session(agent_session, scripted_model, text("It is still In Transit."))
    deliver(agent_session)
    agent_session.resume("Has order 1 arrived yet?")
    agent_session.assert_not_stale()


def test_name_only(agent_session, scripted_model):
    first_session(agent_session, scripted_model, text("It is still In Transit."))
    deliver(agent_session)
    agent_session.resume("Has the order in orders.json arrived yet?")
    agent_session.assert_not_stale()


def test_told_the_new_value(agent_session, scripted_model):
    first_session(agent_session, scripted_model, text("Yes, it was delivered."))
    deliver(agent_session)
    agent_session.resume("Order 1 changed: it is now Delivered. Has it arrived yet?")
    agent_session.assert_not_stale()


def test_told_it_changed(agent_session, scripted_model):
    first_session(agent_session, scripted_model, text("Let me look again."))
    deliver(agent_session)
    agent_session.resume("Note: orders.json was updated since you read it. Has order 1 arrived yet?")
    agent_session.assert_not_stale()


def test_read_again(agent_session, scripted_model):
    first_session(agent_session, scripted_model, get_order_call(), text("Yes, it was delivered."))
    deliver(agent_session)
    agent_session.resume("Has order 1 arrived yet?")
    agent_session.assert_not_stale()


@pytest.mark.parametrize("changed", ["own_file", "orders"])
def test_a_file_the_agent_opened_for_itself(agent_session, scripted_model, changed):
    first_session(agent_session, scripted_model, text("It is still In Transit."))
    if changed == "orders":
        deliver(agent_session)
    else:
        (agent_session.workspace / OWN_FILE).write_text("You answer questions about orders, briefly.\\n")
    agent_session.resume("Has order 1 arrived yet?")
    agent_session.assert_not_stale()


@pytest.mark.parametrize("changed", ["written", "orders"])
def test_a_file_only_the_snapshots_read(agent_session, scripted_model, changed):
    """notes.txt is written, then hashed by the checkpoint before the lookup (and again as it is racy): never read by
    the agent."""
    first_session(agent_session, scripted_model, text("It is still In Transit."),
                  first=[write_call(agent_session), get_order_call()])
    if changed == "orders":
        deliver(agent_session)
    else:
        (agent_session.workspace / "notes.txt").write_text("Asha called.")
    agent_session.resume("Has order 1 arrived yet?")
    agent_session.assert_not_stale()


def test_fresh_with_a_summary(agent_session, scripted_model):
    first_session(agent_session, scripted_model, text("Yes, it was delivered."))
    deliver(agent_session)
    agent_session.run("Summary of an earlier session: the user asked where order 1 is. Has it arrived yet?")
    agent_session.assert_not_stale()
'''
STALE = {"test_blind", "test_name_only", "test_a_file_the_agent_opened_for_itself[orders]",
         "test_a_file_only_the_snapshots_read[orders]"}
# A process agent starts (and imports anthropic) at every run: it plays the cases where being a process matters (what
# it reads, and when); a prompt is judged the same for every agent.
PROCESS = "test_blind or test_read_again or opened_for_itself or snapshots_read"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["command", "loop", "claude"])
def test_a_blind_resume_is_stale_and_an_informed_one_is_not(pytester, monkeypatch, kind):
    """The sources of a carried result are the files the agent's processes read while the call ran: an order looked
    up by id in orders.json, by a tool whose input names no file (Bash `jq` for the CLI).  A resume told what changed
    (the new value, or a note that orders.json changed), a re-read and a fresh start are quiet; naming the file is not
    telling.  A file the agent read for itself (its instructions) and one only the oracle's snapshots read are no
    source."""
    shutil.copy(REPL, pytester.path / "repl_agent.py")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_orders=TESTS)
    monkeypatch.setenv("STALE_AGENT", kind)
    result = pytester.runpytest("-p", "no:randomly", "-rA", *(["-k", PROCESS] if kind == "command" else []))
    result.stdout.fnmatch_lines([
        "*HistoryInconsistent: The resumed session answered from what it read before the world changed:",
        "*message #*: stale-resume: the resumed session carries the * result of orders.json as it was read "
        "(*In Transit*), and orders.json has changed since (now *Delivered*); the resumed run neither read it again "
        "nor was told what changed. Fix: tell the resumed session what changed (its new content, or a note that "
        "orders.json changed), have it read orders.json again, or start fresh with a summary "
        "(start_fresh_with_summary).",
    ])
    failed = {line.split()[1].split("::")[1] for line in result.outlines if line.startswith("FAILED ")}
    passed = {line.split()[1].split("::")[1] for line in result.outlines if line.startswith("PASSED ")}
    assert failed == (STALE - {"test_name_only"} if kind == "command" else STALE)
    assert len(passed) == (3 if kind == "command" else 6)


NEW_SCRIPT = '''
from conftest import get_order_call, write_call
from pytest_controlplane import text


def test_a_new_script_for_the_resume(agent_session, scripted_model):
    (agent_session.workspace / "orders.json").write_text(\'{"1": {"status": "In Transit"}}\')
    (agent_session.workspace / "system.txt").write_text("You answer questions about orders.")
    scripted_model([get_order_call(), text("Order 1 is In Transit.")])
    agent_session.run("Where is order 1?")
    (agent_session.workspace / "orders.json").write_text(\'{"1": {"status": "Delivered"}}\')
    scripted_model([write_call(agent_session), text("Noted. It is still In Transit.")])  # its call is numbered 1 too
    agent_session.resume("Write down that Asha called. Has order 1 arrived yet?")
    agent_session.assert_not_stale()
'''


def test_a_carried_call_is_the_one_of_its_session_when_a_new_script_numbers_calls_afresh(pytester, monkeypatch):
    """Each scripted model numbers its tool calls from 1: the resume's write_file call has the id of the carried
    get_order call, and what it read (nothing) is not taken for what the lookup read."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_new_script=NEW_SCRIPT)
    monkeypatch.setenv("STALE_AGENT", "loop")
    result = pytester.runpytest("-p", "no:randomly")
    result.stdout.fnmatch_lines(["*stale-resume: the resumed session carries the get_order result of orders.json*"])
    result.assert_outcomes(failed=1)


DECLARED = '''
import json

import pytest
from pytest_controlplane import LoopAgent, text, tool_use

TOOLS = [{"name": "get_order", "description": "Look an order up by its id.", "input_schema": {
    "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}]


@pytest.fixture
def agent():
    def options(workspace):
        orders = json.loads((workspace / "orders.json").read_text())  # read once, as each run starts
        return {"system": "Answer about orders.", "tools": TOOLS,
                "tool_impls": {"get_order": lambda order_id: json.dumps(orders[order_id])}}

    return LoopAgent(options, reading_tools=())


def resumed(agent_session, scripted_model, prompt):
    orders = agent_session.workspace / "orders.json"
    orders.write_text(\'{"1": {"status": "In Transit"}}\')
    scripted_model([tool_use("get_order", {"order_id": "1"}), text("In Transit."), text("Delivered, then.")])
    agent_session.run("Where is order 1?")
    orders.write_text(\'{"1": {"status": "Delivered"}}\')
    agent_session.resume(prompt)


def test_undeclared(agent_session, scripted_model):
    resumed(agent_session, scripted_model, "Has order 1 arrived yet?")
    assert agent_session.stale_problems() == []  # the tool read nothing while it ran


def test_declared(agent_session, scripted_model):
    agent_session.declare_sources(get_order="orders.json")
    resumed(agent_session, scripted_model, "Has order 1 arrived yet?")
    agent_session.assert_not_stale()


def test_declared_and_told(agent_session, scripted_model):
    agent_session.declare_sources(get_order=["orders.json"])
    resumed(agent_session, scripted_model, "Order 1 changed: it is now Delivered. Has it arrived yet?")
    agent_session.assert_not_stale()
'''


def test_a_tool_answering_from_a_copy_is_judged_by_the_sources_declared_for_it(pytester):
    """A tool that answers from what the agent loaded as it started reads nothing while it runs: declare_sources names
    the file its results come from, and the blind resume is caught (the informed one stays quiet)."""
    pytester.makepyfile(test_declared=DECLARED)
    result = pytester.runpytest("-p", "no:randomly")
    result.stdout.fnmatch_lines(["*stale-resume: the resumed session carries the get_order result of orders.json as "
                                 "it was read (*In Transit*), and orders.json has changed since*"])
    result.assert_outcomes(passed=2, failed=1)
    assert "FAILED test_declared.py::test_declared - " in result.stdout.str()


def test_what_a_call_read_leaves_out_the_snapshots_and_the_clis_own_files(tmp_path):
    """Two calls run side by side: the first writes notes.txt (which the checkpoint of the second hashes, while the
    first still runs) and reads orders.json and CLAUDE.md.  Its sources are orders.json alone: the snapshot's reads
    are the oracle's, and CLAUDE.md is the CLI's own."""
    from pytest_controlplane import Effects, ToolCall

    (tmp_path / "orders.json").write_text("{}")
    (tmp_path / "CLAUDE.md").write_text("Be brief.")
    effects = Effects(tmp_path)
    effects.begin()
    effects.checkpoint("pre", "t1", ("Bash", {}))
    (tmp_path / "notes.txt").write_text("Call Asha.")
    effects.checkpoint("pre", "t2", ("Bash", {}))
    (tmp_path / "orders.json").read_text(), (tmp_path / "CLAUDE.md").read_text()
    effects.checkpoint("post", "t1", ("Bash", {}))
    effects.checkpoint("post", "t2", ("Bash", {}))
    effects.end([ToolCall("t1", "Bash", {}), ToolCall("t2", "Bash", {})])
    orders = {str(tmp_path / "orders.json")}
    assert [(r.call.id, r.paths) for r in effects.reads] == [("t1", orders), ("t2", orders)]


ORDER_READ = [
    {"role": "user", "content": "Where is order 1?"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file",
                                       "input": {"path": "orders/1.json"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": '{"status": "In Transit"}'}]},
    {"role": "assistant", "content": [{"type": "text", "text": "In Transit."}]},
]


@pytest.mark.parametrize(
    ("prompt", "stale"),
    [
        ("Has the order in orders/1.json arrived yet?", True),  # naming the file tells nothing
        ("Is orders/1.json still In Transit?", True),
        ("Read orders/1.json. Has anything changed?", True),  # the note must name the file
        ("Note: orders/1.json changed. Has the order arrived?", False),
        ("orders/1.json was updated: has the order arrived?", False),
        ("1.json is different now. Has the order arrived?", False),
        ("Someone modified orders/1.json; has the order arrived?", False),
        ("Order 1 changed: it is now Delivered. Has it arrived?", False),  # the new value
        ('orders now: {"status": "Delivered"}. Has it arrived?', False),  # the new content
    ],
)
def test_a_resume_is_told_by_the_new_content_or_a_note_not_by_the_name(tmp_path, prompt, stale):
    from pytest_controlplane import check_history

    (tmp_path / "orders").mkdir()
    (tmp_path / "orders" / "1.json").write_text('{"status": "Delivered"}')
    messages = [*ORDER_READ, {"role": "user", "content": prompt}, {"role": "assistant", "content": "Answer."}]
    assert [p.kind for p in check_history(messages, world=tmp_path)] == (["stale-resume"] if stale else [])


def test_a_message_list_checked_against_its_world_is_stale_until_the_file_agrees(tmp_path):
    """check_history(messages, world=...) reads the list's last prompt as the resume, and a call's source as the file
    its input's path names; the same list is quiet once the file holds what was read again, after a later call that
    reads it, or with no world to check against."""
    from pytest_controlplane import check_history

    (tmp_path / "orders").mkdir()
    order = tmp_path / "orders" / "1.json"
    messages = [
        *ORDER_READ,
        {"role": "user", "content": "Has it arrived yet?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Still In Transit."}]},
    ]
    order.write_text('{"status": "Delivered"}')
    [problem] = check_history(messages, world=tmp_path)
    assert (problem.kind, problem.line) == ("stale-resume", 2)
    assert "now '{\"status\": \"Delivered\"}'" in problem.message
    assert check_history(messages) == []
    read_again = [*messages[:5],
                  {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "read_file",
                                                     "input": {"path": "orders/1.json"}}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "..."}]},
                  {"role": "assistant", "content": "Delivered."}]
    assert check_history(read_again, world=tmp_path) == []
    order.write_text('{"status": "In Transit"}')
    assert check_history(messages, world=tmp_path) == []
