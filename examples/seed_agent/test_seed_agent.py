"""The seed agent's sessions, resumed and crashed: its write_text save tears the session file at a crash, the
atomic save (the one-line fix) resumes from every crash point.  No API key: a cassette, or the scripted model."""

import pytest

from pytest_controlplane import HistoryInconsistent, text, tool_use

# The run writes a file and answers: two model requests (and streams), and two saves (after the tool's result,
# after the answer), each a crash point.
SCRIPT = [tool_use("write_file", {"path": "notes.txt", "content": "release on friday"}), text("Written to notes.txt.")]


def test_a_resumed_session_remembers_what_it_was_told(agent_session):
    agent_session.run("Note that the release is on friday.")
    assert (agent_session.workspace / "notes.txt").read_text() == "release on friday"
    agent_session.resume("What did I ask you to note again?")
    assert "release date" in agent_session.result
    assert [m["role"] for m in agent_session.history] == ["user", "assistant", "user", "assistant", "user",
                                                         "assistant"]
    agent_session.assert_consistent()


def test_the_seeds_save_tears_the_session_when_it_crashes_mid_write(agent_session):
    report = agent_session.crash_everywhere("Write it to notes.txt.", script=SCRIPT)
    print(report)
    assert [str(result.point) for result in report.results] == [
        "request 1", "request 2", "stream 1", "stream 2", "save 1", "save 2"]
    with pytest.raises(HistoryInconsistent, match=r"save 2 .*torn-store: .*/sessions/.*\.json \(\d+ bytes\) cannot be read"):
        report.assert_consistent()


class TestWithTheFix:
    @pytest.fixture
    def agent(self, fixed_agent):
        return fixed_agent

    def test_every_crash_point_resumes_to_one_history(self, agent_session):
        report = agent_session.crash_everywhere("Write it to notes.txt.", script=SCRIPT)
        print(report)
        assert len(report.results) == 6
        report.assert_consistent()


# The seed's cache.py story: a session reads cache.py, a colleague adds a lock before the next session, and the
# resumed session is asked again.  Blind, it answers from the file as it was; told what changed, it does not.
CACHE_THEN = "_store = {}\n\ndef get(key):\n    return _store[key]  # no lock\n"
CACHE_NOW = "import threading\n_lock = threading.Lock()\n_store = {}\n\ndef get(key):\n    with _lock:\n        return _store[key]\n"
READ_CACHE = [tool_use("read_file", {"path": "cache.py"}), text("No: cache.py reads _store without a lock.")]


def _investigated(agent_session):
    (agent_session.workspace / "cache.py").write_text(CACHE_THEN)
    agent_session.run("Is cache.py thread-safe?")
    (agent_session.workspace / "cache.py").write_text(CACHE_NOW)  # the world changes between the sessions


@pytest.mark.agent(script=[*READ_CACHE, text("Still no: it takes no lock.")])
def test_a_blind_resume_answers_from_the_file_as_it_was(agent_session):
    _investigated(agent_session)
    agent_session.resume("Is it thread-safe now?")
    with pytest.raises(HistoryInconsistent, match=r"stale-resume: .* of cache.py as it was read .*has changed since"):
        agent_session.assert_not_stale()


@pytest.mark.agent(script=[*READ_CACHE, text("Yes: get() takes the lock now.")])
def test_an_informed_resume_is_told_what_changed(agent_session):
    _investigated(agent_session)
    agent_session.resume("Note: cache.py changed since you read it: get() now takes a lock. Is it thread-safe now?")
    agent_session.assert_not_stale()
