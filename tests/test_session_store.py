"""The session store, used as a user's tests would use it: atomic, checked, plain, named safely."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_controlplane import SessionCorrupt, SessionStore

USER_TESTS = '''
import json
import pytest
from anthropic.types import TextBlock, ToolUseBlock
from pytest_controlplane import (ConfigError, SessionCorrupt, SessionFormatError, SessionNotFound, SessionStore,
                                 fork_session, resume_session)

PROMPT = {"role": "user", "content": "hi"}


@pytest.fixture
def store(tmp_path):
    return SessionStore(tmp_path / "sessions", root=tmp_path)


def test_sdk_blocks_are_stored_as_plain_dicts(store):
    blocks = [TextBlock(type="text", text="reading"), ToolUseBlock(type="tool_use", id="t1", name="read", input={"path": "a"})]
    store.save("s", [PROMPT, {"role": "assistant", "content": blocks}])
    saved = json.loads(store.path("s").read_text())["messages"][1]["content"]
    assert saved == [{"type": "text", "text": "reading"}, {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}]


def test_the_seed_bug_sdk_objects_dumped_as_strings(store):
    blocks = [TextBlock(type="text", text="reading")]
    json.loads(json.dumps({"content": blocks}, default=str))  # what the seed did: it "works"
    store.save("s", [PROMPT, {"role": "assistant", "content": json.loads(json.dumps(blocks, default=str))}])


def test_a_session_file_written_by_the_seed(store):
    store.path("old").parent.mkdir(parents=True, exist_ok=True)
    store.path("old").write_text(json.dumps({"format": "pytest-controlplane/session-v1", "reads": {}, "messages": [
        PROMPT, {"role": "assistant", "content": "[TextBlock(citations=None, text='hi', type='text')]"}]}))
    store.load("old")


def test_torn_file(store):
    store.save("s", [PROMPT])
    store.path("s").write_bytes(store.path("s").read_bytes()[:40])
    store.load("s")


def test_foreign_file(store):
    store.path("notes").parent.mkdir(parents=True, exist_ok=True)
    store.path("notes").write_text(json.dumps([PROMPT]))
    store.load("notes")


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "x" * 200])
def test_bad_names(store, name):
    store.save(name, [PROMPT])


def test_fork_of_nothing(store):
    store.save("real", [PROMPT])
    fork_session("missing", "copy", store=store)


def test_loop_that_returns_only_the_answer(store):
    resume_session("s", "hi", store=store, loop=lambda messages: "an answer")


def test_loop_that_returns_the_list_it_was_given(store):
    def loop(messages):
        copy = list(messages)
        copy.append({"role": "assistant", "content": "an answer"})
        return "an answer", messages
    resume_session("s", "hi", store=store, loop=loop)


def test_loop_that_drops_history(store):
    store.save("s", [PROMPT, {"role": "assistant", "content": "first"}])
    resume_session("s", "again", store=store, loop=lambda messages: ("a", [messages[-1], {"role": "assistant", "content": "a"}]))
'''


def test_the_store_refuses_what_would_break_a_session(pytester):
    pytester.makepyfile(test_store=USER_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=13)
    lines = result.stdout.str()
    for expected in [
        'SessionFormatError: messages[1].content[0] holds an SDK object turned into a string ("TextBlock(citations=None',
        "Store the blocks themselves (or block.model_dump()); json.dumps(..., default=str) or str() on SDK objects",
        "SessionCorrupt: old.json: messages[1].content holds an SDK object turned into a string",
        "SessionCorrupt: Session file ",
        "s.json is not valid JSON (",
        "notes.json is not a pytest-controlplane/session-v1 file (format: 'list').",
        "Restore it from version control, or delete ",
        "ConfigError: Session name '../x' is not allowed.",
        "ConfigError: Session name 'a/b' is not allowed.",
        "ConfigError: Session name '' is not allowed.",
        "ConfigError: Session name '.hidden' is not allowed.",
        "SessionNotFound: Cannot fork session 'missing': it does not exist in ",
        "Existing sessions: real.",
        "SessionFormatError: The agent loop <lambda> returned str, not (answer, messages).",
        "SessionFormatError: The messages loop returned hold no model answer after the prompt: it probably appended "
        "to a copy and returned the list it was given.",
        "SessionFormatError: The messages <lambda> returned do not start with the 3 it was given: it dropped or "
        "rewrote history, and saving them would lose it.",
    ]:
        assert expected in lines, expected
    assert "Session name 'xxxxxxxx" in lines


SAVER = r'''
import sys
from pytest_controlplane import SessionStore

store = SessionStore(sys.argv[1])
naive = sys.argv[2] == "naive"
filler = "x" * 20_000  # a big session, so each save takes a while and a kill lands inside one
messages = []
for n in range(200):
    messages += [{"role": "user", "content": f"turn {n} {filler}"}, {"role": "assistant", "content": f"answer {n}"}]
    if naive:  # what the seed did: write in place
        import json
        with open(store.path("s"), "w") as out:
            data = json.dumps({"format": "pytest-controlplane/session-v1", "reads": {}, "messages": messages})
            out.write(data[: len(data) // 2]); out.flush()
            print("half", flush=True)
            __import__("time").sleep(1)  # a slow disk: the kill lands while the file is half written
            out.write(data[len(data) // 2:])
    else:
        store.save("s", messages)
    print(n, flush=True)
'''


def kill_during_saves(tmp_path: Path, mode: str, after: int) -> SessionStore:
    sessions = tmp_path / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-c", SAVER, str(sessions), mode], stdout=subprocess.PIPE, text=True)
    seen = 0
    for line in process.stdout:
        if line.strip() == ("half" if mode == "naive" else str(after)) and (mode != "naive" or seen >= after):
            process.send_signal(signal.SIGKILL)
            break
        seen += line.strip().isdigit()
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the saver finished before it was killed"
    return SessionStore(sessions)


@pytest.mark.parametrize("after", [3, 17, 41, 90])
def test_sigkill_during_200_saves_leaves_the_old_or_the_new_session(tmp_path, after):
    store = kill_during_saves(tmp_path, "atomic", after)
    messages = store.load("s")  # raises SessionCorrupt on a torn file
    assert len(messages) in (2 * (after + 1), 2 * (after + 2))  # the save it was in, done or not at all
    assert messages[-1]["content"] in (f"answer {after}", f"answer {after + 1}")


def test_the_same_kill_tears_a_file_written_in_place(tmp_path):
    """The control: without temp file + rename the kill leaves half a file, and loading says so."""
    store = kill_during_saves(tmp_path, "naive", 5)
    with pytest.raises(SessionCorrupt, match="is not valid JSON"):
        store.load("s")
