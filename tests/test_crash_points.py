"""Crash points as a user writes them, and the crash reports as a user reads them, exactly."""

from __future__ import annotations

import json

import pytest

from pytest_controlplane.agents.process import stderr_tail
from pytest_controlplane.crash import CrashPoint, CrashReport, CrashResult, HistoryInconsistent
from pytest_controlplane.recovery import _why, lost
from pytest_controlplane.errors import AgentError, ConfigError, SessionCorrupt
from pytest_controlplane.history.check import Problem
from pytest_controlplane.history.stored import JSONL, MESSAGES, Stored


@pytest.mark.parametrize("written, kind, number", [
    ("request 2", "request", 2), ("stream:1", "stream", 1), ("tool: 3", "tool", 3), ("save  12", "save", 12),
])
def test_a_crash_point_is_its_kind_and_number_in_the_spellings_users_write(written, kind, number):
    point = CrashPoint.parse(written)
    assert (point.kind, point.number, str(point)) == (kind, number, f"{kind} {number}")
    assert CrashPoint.parse(point) is point


@pytest.mark.parametrize("written", ["request 0", "bogus 1", "tool x", "save", "stream 1 2", "", 3])
def test_anything_else_is_an_error_that_says_what_to_write(written):
    with pytest.raises(ConfigError) as caught:
        CrashPoint.parse(written)
    assert str(caught.value).splitlines()[0] == (
        f"Unknown crash point {written!r}; write 'request N', 'stream N', 'tool N' or 'save N' (N counts from 1 "
        "within the run).")


def test_a_report_lists_each_point_before_and_after_and_counts_the_consistent_ones():
    torn = Problem("corrupt-line", 4, "not JSON")
    unanswered = Problem("unanswered-tool-use", 3, "tool_use t1 has no tool_result")
    report = CrashReport([
        CrashResult(CrashPoint("tool", 1), before=[unanswered, torn], resumed="resumed"),
        CrashResult(CrashPoint("save", 2), after=[torn], resumed="started over"),
        CrashResult(CrashPoint("request", 1), resumed="resumed"),
    ])
    assert str(report) == "\n".join([
        "3 crash point(s), 2 consistent after resume:",
        "tool 1     after the crash: line 3: unanswered-tool-use: tool_use t1 has no tool_result; "
        "line 4: corrupt-line: not JSON",
        "           resumed: consistent",
        "save 2     after the crash: consistent",
        "           started over: line 4: corrupt-line: not JSON",
        "request 1  after the crash: consistent",
        "           resumed: consistent",
    ])
    with pytest.raises(HistoryInconsistent) as caught:
        report.assert_consistent()
    assert str(caught.value) == (
        f"1 crash point(s) did not resume to one consistent history.\n{report}\nHow to fix:\n  corrupt-line: a line "
        "was cut off mid-write (a crash while appending): write each line whole, or skip a torn last line when loading")
    CrashReport(report.results[::2]).assert_consistent()  # only the consistent ones: quiet


def test_a_warning_after_the_resume_is_no_inconsistency():
    result = CrashResult(CrashPoint("stream", 1), after=[Problem("merged-lines", 2, "two lines", severity="warning")],
                         resumed="resumed")
    assert result.consistent
    CrashReport([result]).assert_consistent()


def test_a_failed_check_shows_the_users_line_not_ours(pytester):
    pytester.makepyfile('''
from pytest_controlplane.crash import CrashPoint, CrashReport, CrashResult
from pytest_controlplane.history.check import Problem

def test_it():
    CrashReport([CrashResult(CrashPoint("tool", 1), after=[Problem("lost-entry", None, "gone")],
                             resumed="resumed")]).assert_consistent()
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "--tb=long")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*HistoryInconsistent: 1 crash point(s) did not resume*",
                                 "*resumed: lost-entry: gone"])
    assert "raise HistoryInconsistent" not in result.stdout.str()  # the frame that raised it is hidden


def test_a_crash_point_really_stops_the_agent_where_it_says(pytester, monkeypatch):
    """Each kind of point cuts the run there: the agent (a process) is killed, and what comes after never happens."""
    import shell_agent

    result = shell_agent.run(pytester, monkeypatch, '''
import pytest
from pytest_controlplane import text, tool_use


@pytest.mark.parametrize("point", ["request 1", "stream 1", "request 2", "stream 2"])
def test_cut(agent_session, scripted_model, point):
    def answer(request):  # a function of the request: no turn is left unused when the crash cuts the run
        messages = request.json["messages"]
        answered = any(isinstance(m["content"], list) and m["content"][0]["type"] == "tool_result" for m in messages)
        return text("done") if answered else tool_use("Bash", {"command": "echo one >> log.txt"})

    scripted_model(answer)
    agent_session.crash("Go.", at=point)
    run = agent_session.runs[-1]
    log = agent_session.world.workspace / "log.txt"
    assert "killed" in str(run.error), run.error
    assert log.exists() == point.endswith("2")  # the tool ran only when the crash came after its turn
    assert run.result == ""
''', "-p", "no:randomly")
    result.assert_outcomes(passed=4)


def _line(uuid: str, text: str) -> str:
    return json.dumps({"type": "user", "uuid": uuid, "sessionId": "s", "message": {"role": "user", "content": text}})


def _messages(*texts: str) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


@pytest.mark.parametrize("known, after, intact, expected", [
    (None, Stored(MESSAGES, _messages("a")), True, []),
    (Stored(MESSAGES, []), None, True, []),
    (Stored(MESSAGES, _messages("a")), Stored(MESSAGES, None), False, []),  # torn after the resume: its own problem
    (Stored(MESSAGES, _messages("a", "b")), Stored(MESSAGES, _messages("a", "b", "c")), True, []),
    (Stored(MESSAGES, _messages("a", "b")), None, True,
     ["lost-history: nothing is stored after the resume; the store held 2 messages before the crash"]),
    (Stored(JSONL, [_line("u1", "a"), _line("u2", "b"), _line("u3", "c")]), None, True,
     ["lost-history: nothing is stored after the resume; the store held 3 transcript lines before the crash"]),
    (Stored(MESSAGES, _messages("a", "b")), Stored(MESSAGES, _messages("b")), True,
     ["lost-entry: the messages stored before the crash are not the start of the history after the resume"]),
    (Stored(MESSAGES, _messages("a")), Stored(MESSAGES, _messages("x")), False,
     ["lost-history: the resume started over: the store held 1 message before the save that was cut off, and "
      "none of it is in the history after it"]),
    (Stored(JSONL, [_line("u1", "a"), _line("u2", "b")]), Stored(JSONL, [_line("u2", "b")]), True,
     ["line 1: lost-entry: entry u1 existed before the crash and is gone after the resume"]),
    (Stored(JSONL, [_line("u1", "a")]), Stored(JSONL, [_line("u9", "x")]), False,
     ["lost-history: the resume started over: the store held 1 transcript line before the save that was cut "
      "off, and none of it is in the history after it"]),
    (Stored(JSONL, [_line("u1", "a")]), Stored(JSONL, [_line("u1", "a"), _line("u2", "b")]), False, []),
    (Stored(JSONL, [_line("u1", "a")]), Stored(MESSAGES, _messages("a")), True,  # the store changed its format
     ["lost-entry: the messages stored before the crash are not the start of the history after the resume"]),
])
def test_what_a_resume_lost_is_named_by_what_was_stored_before_the_crash(known, after, intact, expected):
    assert [str(p) for p in lost(known, after, intact=intact)] == expected
    if intact:  # the default: what a session machine asks, with the store never cut
        assert [str(p) for p in lost(known, after)] == expected


@pytest.mark.parametrize("stderr, expected", [
    (["Traceback (most recent call last):", "json.decoder.JSONDecodeError: Expecting value"],
     "The agent exited with status 1. (json.decoder.JSONDecodeError: Expecting value)"),
    (["ValueError: torn"], "The agent exited with status 1. (ValueError: torn)"),
    ([], "The agent exited with status 1."),
    (["ValueError: torn", "", "  "], "The agent exited with status 1. (ValueError: torn)"),  # blank lines after it
    (None, "The agent exited with status 1."),  # an error of ours that is no AgentError: nothing on stderr to say
])
def test_a_failed_resume_is_named_by_the_agents_own_last_stderr_line(stderr, expected):
    if stderr is None:
        error = SessionCorrupt("The agent exited with status 1.\nand more", hint="Restore it.")
    else:
        error = AgentError(f"The agent exited with status 1.\nstderr tail:\n{stderr_tail(stderr)}",
                           hint="The stderr tail says why.", stderr=stderr)
    assert _why(error) == expected


def test_a_tool_crash_waits_for_the_cli_to_record_the_call_and_gives_up_at_its_deadline(tmp_path, monkeypatch):
    """The Claude Code CLI appends the tool_use line on its own time; the crash polls for it (in any project's
    transcript) and kills all the same if it never comes.  The clock is the test's: the CLI writes during the first
    pause, and a deadline passes in pauses, not in seconds."""
    import types

    import pytest_controlplane.crash as crash
    from pytest_controlplane.agents.world import World

    world = World.create(tmp_path)
    transcript = world.config_dir / "projects" / "-ws" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"type": "user"}\n')
    clock, pauses = [100.0], []

    def pause(seconds):
        pauses.append(seconds)
        clock[0] += seconds
        if len(pauses) == 1:  # the CLI records the call while the crash waits
            with transcript.open("a") as f:
                f.write('{"message": {"content": [{"type": "tool_use", "id": "toolu_9"}]}}\n')

    monkeypatch.setattr(crash, "time", types.SimpleNamespace(monotonic=lambda: clock[0], sleep=pause))
    crash.wait_until_recorded(world, "toolu_9")
    assert pauses == [0.01]  # polled, paused once, found it
    pauses.clear()
    crash.wait_until_recorded(world, "toolu_never", seconds=0.1)  # returns: the report shows what was stored
    assert 10 <= len(pauses) <= 11 and set(pauses) == {0.01}


def test_a_crash_no_resume_followed_is_not_consistent_and_says_why():
    """crash() alone has shown no recovery: not consistent, whatever the store looks like, and it says what to do;
    a failed resume is not consistent either."""
    alone = CrashResult(CrashPoint("save", 1))
    assert not alone.consistent and alone.reason.startswith("no resume ran after the crash")
    assert str(alone).splitlines()[1].strip().startswith("not resumed: no resume ran after the crash")
    failed = CrashResult(CrashPoint("save", 1), after=[Problem("resume-failed", None, "exit 1")], resumed="resume failed")
    assert not failed.consistent and "resume-failed" in failed.reason
    assert CrashResult(CrashPoint("save", 1), resumed="resumed").consistent


def test_a_failure_says_the_cause_and_the_fix_of_each_kind_and_no_unexplained_prefix():
    torn = Problem("torn-store", None, "sessions/s.json (177 bytes) cannot be read: not a whole JSON document")
    assert str(torn) == "torn-store: sessions/s.json (177 bytes) cannot be read: not a whole JSON document"
    report = CrashReport([CrashResult(CrashPoint("save", 1), before=[torn], after=[Problem("resume-failed", None,
                                                                                         "exit 1")],
                                      resumed="resume failed")])
    with pytest.raises(HistoryInconsistent) as caught:
        report.assert_consistent()
    assert str(caught.value).endswith(
        "How to fix:\n"
        "  resume-failed: the agent could not resume its own session (the error above says why): make it read what "
        "a crash can leave, or save so that a crash leaves the old store whole\n"
        "  torn-store: the store is written in place (open('w') truncates it before the new content is in): write a "
        "temporary file beside it, flush and fsync it, then os.replace it over the old one")
