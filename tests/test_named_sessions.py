"""Sessions as users drive them: a test names its session and resumes and forks it by name, through a CommandAgent
whose argv function is documented by what it receives; an agent that reads prompts until `quit` gets it with
`stdin_end=`.  The agent is a REPL in a public seed-style shape (tests/data/repl_agent.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPL = Path(__file__).parent / "data" / "repl_agent.py"
CONFTEST = '''
import sys
from pathlib import Path

import pytest
from pytest_controlplane import CommandAgent

AGENT = Path(__file__).with_name("repl_agent.py")
CALLS = []  # what the argv function receives, run by run


def argv(session_id, resume, fork):
    CALLS.append((session_id, resume, fork))
    if fork:
        return [sys.executable, str(AGENT), session_id, "--fork-from", resume]
    return [sys.executable, str(AGENT), resume or session_id]


@pytest.fixture
def agent(request):
    end = getattr(request.module, "STDIN_END", "quit\\n")
    return CommandAgent(argv, transcript=lambda world, name: world.workspace / "sessions" / f"{name}.json",
                        stdin_end=end)
'''
TESTS = '''
import json
from conftest import CALLS
from pytest_controlplane import text


def test_named(agent_session, scripted_model):
    CALLS.clear()
    scripted_model([text("Hello Asha."), text("Still here."), text("Another way, then.")])
    agent_session.run("Hi, I am Asha.", session="asha-case")
    agent_session.resume("Still there?", session="asha-case")
    agent_session.fork("Try another way.", session="asha-case", name="asha-fork")
    stored = agent_session.workspace / "sessions"
    parent = json.loads((stored / "asha-case.json").read_text())
    child = json.loads((stored / "asha-fork.json").read_text())
    assert parent["name"] == "asha-case" and len(parent["messages"]) == 4
    assert child["name"] == "asha-fork" and child["messages"][:4] == parent["messages"] and len(child["messages"]) == 6
    new, resumed, forked = CALLS
    assert new == ("asha-case", None, False)
    assert resumed[1:] == ("asha-case", False) and resumed[0] != "asha-case"  # a new id the resume may ignore
    assert forked == ("asha-fork", "asha-case", True)  # session_id: the new session; resume: its parent
    assert agent_session.names == {"asha-case": "asha-case", "asha-fork": "asha-fork"}
    agent_session.assert_consistent("asha-case")
    agent_session.assert_consistent()  # the last one: the fork
'''


@pytest.fixture
def repl(pytester):
    shutil.copy(REPL, pytester.path / "repl_agent.py")
    pytester.makeconftest(CONFTEST)
    return pytester


def test_a_named_session_is_resumed_and_forked_by_name(repl):
    repl.makepyfile(test_named=TESTS)
    result = repl.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)


def test_without_its_end_of_input_the_repl_fails_saying_why(repl):
    """The same agent given the prompt alone (stdin closed, no `quit`) exits 3; the failure shows its own words."""
    repl.makepyfile(test_named='STDIN_END = ""\n' + TESTS)
    result = repl.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*The agent process python* exited with code 3*", "*stdin closed without `quit`*"])


UNKNOWN = '''
import json
import shutil

import pytest
from pytest_controlplane import ConfigError, text


def sessions(agent_session, scripted_model, *then):
    """A named session and an unnamed one; the model answers `then` after them."""
    scripted_model([text("Hello Asha."), text("Hello."), *then])
    agent_session.run("Hi, I am Asha.", session="asha-case")
    agent_session.run("Hi.")
    return agent_session


def test_assert_consistent_on_an_unknown_name_fails(agent_session, scripted_model):
    sessions(agent_session, scripted_model).assert_consistent("no-such-session")


def test_transcript_path_and_resume_on_an_unknown_name_fail(agent_session, scripted_model):
    two_sessions = sessions(agent_session, scripted_model)
    for call in (lambda: two_sessions.transcript_path("no-such"), lambda: two_sessions.resume("Go on.", "no-such"),
                 lambda: two_sessions.fork("Go on.", "no-such"), lambda: two_sessions.history_problems("no-such")):
        with pytest.raises(ConfigError, match="No session 'no-such'.*Session names: 'asha-case'") as raised:
            call()
        assert two_sessions.session_id in str(raised.value)  # the unnamed session's id is listed
    assert len(two_sessions.runs) == 2  # the resume and fork never ran: no session "no-such" made on the way


def test_a_name_and_a_raw_id_still_work(agent_session, scripted_model):
    two_sessions = sessions(agent_session, scripted_model, text("Still here."))
    stored = two_sessions.workspace / "sessions"
    unnamed = two_sessions.session_id
    assert two_sessions.transcript_path("asha-case") == stored / "asha-case.json"  # names resolve here too
    assert two_sessions.transcript_path(unnamed) == stored / f"{unnamed}.json"
    two_sessions.assert_consistent("asha-case")
    two_sessions.assert_consistent(unnamed)
    shutil.copyfile(stored / "asha-case.json", stored / "copied.json")  # stored, never run in this test
    two_sessions.assert_consistent("copied")
    two_sessions.resume("Still there?", session=unnamed)
    assert len(json.loads((stored / f"{unnamed}.json").read_text())["messages"]) == 4
'''


def test_an_unknown_session_name_fails_listing_the_sessions_there_are(repl):
    """No false pass: assert_consistent, transcript_path, resume, fork of a session that does not exist fail, naming
    the sessions that do; a name and a raw session id (run or stored) still work."""
    repl.makepyfile(test_unknown=UNKNOWN)
    result = repl.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ConfigError: No session 'no-such-session'*Session names: 'asha-case'.*Unnamed sessions run: *",
            "*Pass a name given with agent_session.run(prompt, session=NAME)*",
        ]
    )
