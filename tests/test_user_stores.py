"""Crash and resume for agents and session stores written by users: the seed's agent (examples/seed_agent) with its
own save, load and resume, the shapes stores really have, a reader for any other, and the save points of a Python
process cut part-way through its write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anthropic
import pytest

from pytest_controlplane.agents.save_points import SaveHook
from pytest_controlplane.errors import SessionCorrupt
from pytest_controlplane.history.stored import JSONL, MESSAGES, read_stored

REPO = Path(__file__).parent.parent
SEED = REPO / "examples" / "seed_agent" / "agent.py"
TRANSCRIPT = REPO / "tests" / "data" / "transcripts" / "claude-code-2.0.77.jsonl"

# --- the shapes a store has ------------------------------------------------------------------------------------------


def _sdk_messages() -> list[dict]:
    """A user prompt and the SDK's answer with a tool_use, as the seed stores them (blocks model_dump()ed)."""
    reply = anthropic.types.Message.model_validate({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "content": [{"type": "text", "text": "Reading."}, {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                                             "input": {"path": "a.txt"}}]})
    return [{"role": "user", "content": "Read a.txt"},
            {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in reply.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}]}]


def test_each_shape_of_store_is_read_as_what_it_holds(tmp_path):
    messages = _sdk_messages()
    shapes = {
        "seed.json": json.dumps(messages),
        "pretty.json": json.dumps(messages, indent=2),
        "store.json": json.dumps({"format": "mine", "name": "s", "messages": messages}),
        "lines.jsonl": "".join(json.dumps(m) + "\n" for m in messages),
        "one.json": json.dumps(messages[0]),
    }
    for name, text in shapes.items():
        (tmp_path / name).write_text(text)
        stored = read_stored(tmp_path / name)
        assert (stored.kind, stored.content, stored.problems, stored.check()) == (MESSAGES, messages[:1] if name ==
                                                                                  "one.json" else messages, [], []), name
        assert stored.path == tmp_path / name
    claude = read_stored(TRANSCRIPT)
    assert claude.kind == JSONL and claude.content == TRANSCRIPT.read_text().splitlines()
    assert read_stored(tmp_path / "none.json") is None


@pytest.mark.parametrize("marks", [{"uuid": "u1"}, {"sessionId": "s1"}, {"uuid": "u1", "sessionId": "s1"}])
def test_transcript_lines_are_known_by_a_uuid_or_a_session_id(tmp_path, marks):
    lines = [json.dumps({"type": "user", **marks, "message": {"role": "user", "content": "hi"}}), "{torn"]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    stored = read_stored(tmp_path / "t.jsonl")
    assert (stored.kind, stored.content, stored.path) == (JSONL, lines, tmp_path / "t.jsonl")
    (tmp_path / "one.json").write_text(lines[0] + "\n")  # a transcript of one line, under any name
    one = read_stored(tmp_path / "one.json")
    assert (one.kind, one.content, one.path) == (JSONL, lines[:1], tmp_path / "one.json")


def test_a_store_cut_off_part_way_is_torn_with_its_size(tmp_path):
    whole = json.dumps(_sdk_messages())
    (tmp_path / "half.json").write_text(whole[:101])
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "torn.jsonl").write_text("".join(json.dumps(m) + "\n" for m in _sdk_messages()) + '{"role": "assi')
    half = read_stored(tmp_path / "half.json")
    assert half.torn and half.content is None and (half.kind, half.path) == (MESSAGES, tmp_path / "half.json")
    assert [str(p) for p in half.check()] == [
        f"torn-store: {tmp_path / 'half.json'} (101 bytes) cannot be read: not a whole JSON document (Unterminated "
        "string starting at: line 1 column 100 (char 99)); a save was cut off part-way"]
    assert [(p.kind, p.severity) for p in read_stored(tmp_path / "empty.json").check()] == [("torn-store", "error")]
    assert "(0 bytes) cannot be read: empty;" in read_stored(tmp_path / "empty.json").check()[0].message
    torn_line = read_stored(tmp_path / "torn.jsonl")
    assert torn_line.content == _sdk_messages()
    # A store written as UTF-8 (as Node writes JSON) and cut inside a character: torn, not a UnicodeDecodeError.
    raw = json.dumps([{"role": "user", "content": "le café ☕"}], ensure_ascii=False).encode()
    (tmp_path / "mid-char.json").write_bytes(raw[:raw.index("☕".encode()) + 1])
    assert [p.kind for p in read_stored(tmp_path / "mid-char.json").check()] == ["torn-store"]
    assert [str(p) for p in torn_line.check()] == ["line 4: corrupt-line: not JSON: '{\"role\": \"assi'"]
    assert torn_line.path == tmp_path / "torn.jsonl"
    (tmp_path / "long.jsonl").write_text(json.dumps(_sdk_messages()[0]) + "\n" + "x" * 59 + "yz\n")
    assert [p.message for p in read_stored(tmp_path / "long.jsonl").check()] == [f"not JSON: {'x' * 59 + 'y'!r}"]


@pytest.mark.parametrize("text, what", [
    ('{"turns": []}', "a JSON dict that is not a messages list"),
    ('[1, 2]', "a JSON list that is not a messages list"),
    ('{"a": 1}\n{"b": 2}\n', "JSON lines that are neither Claude Code transcript entries nor messages"),
])
def test_a_store_of_no_known_shape_names_the_file_and_the_history_option(tmp_path, text, what):
    (tmp_path / "s.json").write_text(text)
    with pytest.raises(SessionCorrupt) as raised:
        read_stored(tmp_path / "s.json")
    assert str(raised.value).startswith(f"Cannot read the session stored at {tmp_path / 's.json'}: {what}. Known "
                                        "shapes: Claude Code JSONL, JSONL of messages, a JSON list of messages, or a "
                                        "JSON object with a \"messages\" list.")
    assert "CommandAgent(..., history=lambda world, session_id: <the messages list" in raised.value.hint
    assert raised.value.path == tmp_path / "s.json"


# --- the save hook, on every way Python writes a file ----------------------------------------------------------------

WRITER = r'''
import json, os, pathlib, sys, tempfile
style, store = sys.argv[1], pathlib.Path("store")
for i in range(3):
    data = json.dumps([{"role": "user", "content": f"turn {i} " + "x" * 40}])
    path = store / "s.json"
    if style == "write_text":
        path.write_text(data)
    elif style == "json.dump":
        with open(path, "w") as out:
            json.dump(json.loads(data), out)
    elif style == "os.write":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fd, data.encode())
        os.close(fd)
    elif style == "mkstemp":
        fd, temporary = tempfile.mkstemp(dir=store)
        with os.fdopen(fd, "w") as out:
            out.write(data)
        os.replace(temporary, path)
    elif style == "NamedTemporaryFile":
        with tempfile.NamedTemporaryFile("w", dir=store, delete=False) as out:
            out.write(data)
        os.replace(out.name, path)
print("all saved")
'''


@pytest.mark.parametrize("style", ["write_text", "json.dump", "os.write", "mkstemp", "NamedTemporaryFile"])
@pytest.mark.parametrize("armed", [None, 2])
def test_the_save_hook_counts_and_cuts_every_way_python_writes_a_file(tmp_path, style, armed):
    (tmp_path / "store").mkdir()
    hook = SaveHook((tmp_path / "store").resolve(), tmp_path / "log" / "saves.jsonl", armed)
    env = {"PATH": os.environ["PATH"], **hook.env(None)}
    done = subprocess.run([sys.executable, "-c", WRITER, style], cwd=tmp_path, env=env, capture_output=True,
                          text=True, start_new_session=True)
    saves = hook.saves()
    atomic = style in ("mkstemp", "NamedTemporaryFile")
    stored = (tmp_path / "store" / "s.json").read_text() if (tmp_path / "store" / "s.json").exists() else None
    if armed is None:
        assert (done.returncode, done.stdout, len(saves)) == (0, "all saved\n", 3)
        assert [s["cut"] for s in saves] == [False] * 3 and json.loads(stored)[0]["content"].startswith("turn 2")
        return
    assert (done.returncode, done.stdout, [s["save"] for s in saves], [s["cut"] for s in saves]) == (
        -9, "", [1, 2], [False, True])
    if atomic:  # the cut write was to a temporary file: the store holds the first save, whole
        assert json.loads(stored)[0]["content"].startswith("turn 0") and hook.before_cut() is None
        cut = Path(saves[1]["path"])
        assert cut.parent == (tmp_path / "store").resolve() and cut.name != "s.json"
    else:  # the store itself is cut: the start of the second save, and the first is kept aside
        whole = json.dumps([{"role": "user", "content": "turn 1 " + "x" * 40}])
        assert whole.startswith(stored) and 0 < len(stored) < len(whole)
        assert json.loads(hook.before_cut().read_text())[0]["content"].startswith("turn 0")


def test_the_agents_own_sitecustomize_still_runs_under_the_hook(tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "sitecustomize.py").write_text("import os\nos.environ['OWN_SITECUSTOMIZE'] = 'ran'\n")
    hook = SaveHook((tmp_path / "store").resolve(), tmp_path / "log" / "saves.jsonl", None)
    env = {"PATH": os.environ["PATH"], **hook.env(str(tmp_path / "own"))}
    code = "import os, pathlib; pathlib.Path('store/s.json').write_text('[]'); print(os.environ.get('OWN_SITECUSTOMIZE'))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert (done.returncode, done.stdout, len(hook.saves())) == (0, "ran\n", 1)


# --- the seed's agent, its store and its resume, crashed everywhere -------------------------------------------------

CONFTEST = '''
import json, sys
from pathlib import Path

import pytest
from pytest_controlplane import CommandAgent, text, tool_use

AGENT = Path(__file__).with_name("agent.py")
SCRIPT = [tool_use("write_file", {"path": "notes.txt", "content": "release on friday"}), text("Written to notes.txt.")]


def store(world, session_id):
    return world.workspace / "sessions" / f"{session_id}.json"


@pytest.fixture
def agent():
    return CommandAgent(lambda session_id, resume, fork: [sys.executable, str(AGENT), "--session", resume or session_id],
                        transcript=store, **getattr(sys.modules.get("test_seed"), "OPTIONS", {}))


@pytest.fixture
def crash_everywhere(agent_session):
    def run():
        report = agent_session.crash_everywhere("Write it to notes.txt.", script=SCRIPT)
        print(report)
        report.assert_consistent()
    return run
'''

SAVE = "    path.write_text(text)  # the seed's save\n"
ATOMIC = "    write_atomically(path, text)  # the fix\n"
LOAD = "    return json.loads(path.read_text()) if path.exists() else []\n"


def _seed(pytester: pytest.Pytester, *patches: tuple[str, str], tests: str = "def test_it(crash_everywhere):\n"
          "    crash_everywhere()\n") -> pytest.RunResult:
    """The seed's agent with `patches` (old, new) applied to its source, crashed everywhere."""
    source = SEED.read_text()
    for old, new in patches:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    pytester.makefile(".py", agent=source)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_seed=tests)
    return pytester.runpytest("-p", "no:cacheprovider", "-s")


def test_a_resume_that_keeps_only_the_last_stored_message_is_reported(pytester):
    result = _seed(pytester, (SAVE, ATOMIC), ("    messages = load_session(name)\n",
                                              "    messages = load_session(name)[-1:]\n"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "test_seed.py 6 crash point(s), 3 consistent after resume:",
        "request 2 * after the crash: consistent",
        "*resumed: message #0: orphan-tool-result: tool_result for toolu_scripted_001_0, which the message before did "
        "not ask for; message #1: same-role-twice: two user messages in a row; lost-entry: the messages stored "
        "before the crash are not the start of the history after the resume"])


def test_a_resume_that_starts_over_from_a_torn_store_loses_its_history(pytester):
    result = _seed(pytester, (LOAD, "    try:\n        return json.loads(path.read_text())\n"
                                    "    except (OSError, ValueError):\n        return []  # start afresh\n"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "save 1 * after the crash: torn-store: */sessions/*.json (* bytes) cannot be read: not a whole JSON "
        "document (*); a save was cut off part-way",
        "*resumed: consistent",  # its first save: nothing whole was stored before it
        "save 2 * after the crash: torn-store: */sessions/*.json (* bytes) cannot be read: *",
        "*resumed: lost-history: the resume started over: the store held 3 messages before the save that was cut "
        "off, and none of it is in the history after it; model-missed-history: the first request after the resume "
        "lacks stored tool calls ?'toolu_scripted_001_0'?"])


def test_a_store_read_by_the_users_own_reader_is_checked_and_torn_when_it_raises(pytester):
    reader = ('OPTIONS = {"history": lambda world, session_id: json.loads(('
              'world.workspace / "sessions" / f"{session_id}.json").read_text())["conversation"]["turns"]}\n'
              'import json\n')
    result = _seed(pytester, ("    text = json.dumps(messages)\n",
                              "    text = json.dumps({\"conversation\": {\"turns\": messages}})\n"),
                   (LOAD, "    return json.loads(path.read_text())[\"conversation\"][\"turns\"] if path.exists() "
                          "else []\n"),
                   tests=reader + "def test_it(crash_everywhere):\n    crash_everywhere()\n")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*6 crash point(s), 4 consistent after resume:",
                                 "save 1 * after the crash: torn-store: */sessions/*.json (* bytes) cannot be read: "
                                 "history(world, '*') raised JSONDecodeError: *; a save was cut off part-way",
                                 "*resume failed: resume-failed: The agent process python exited with code 1. "
                                 "(json.decoder.JSONDecodeError: *)"])


def test_an_unknown_store_fails_naming_the_file_and_the_history_option(pytester):
    result = _seed(pytester, ("    text = json.dumps(messages)\n", "    text = json.dumps({\"turns\": messages})\n"),
                   tests="def test_it(agent_session, scripted_model):\n"
                         "    from pytest_controlplane import text\n"
                         "    scripted_model([text('hi')])\n"
                         "    agent_session.run('Hello.')\n"
                         "    agent_session.history\n")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*SessionCorrupt: Cannot read the session stored at */workspace/sessions/*.json: a "
                                 "JSON dict that is not a messages list. Known shapes: *",
                                 "*Tell pytest-controlplane how to read it: CommandAgent(..., history=lambda world, "
                                 "session_id: <the messages list, or None if nothing is stored>)."])


def test_agent_history_reads_through_the_users_reader_and_says_when_it_cannot(tmp_path):
    from pytest_controlplane import CommandAgent
    from pytest_controlplane.agents.world import World
    from pytest_controlplane.errors import ConfigError

    world = World.create(tmp_path / "world")
    store = world.workspace / "store.txt"
    messages = _sdk_messages()
    agent = CommandAgent(["my-agent"], transcript=lambda w, s: store,
                         history=lambda w, s: json.loads(store.read_text())["turns"] if store.exists() else None)
    with pytest.raises(SessionCorrupt, match=r"^history\(world, 's1'\) returned None: no session s1 is stored\."):
        agent.history(world, "s1")
    store.write_text(json.dumps({"turns": messages}))
    assert agent.history(world, "s1") == messages and agent.stored(world, "s1").check() == []
    store.write_text(json.dumps({"turns": messages})[:50])
    with pytest.raises(SessionCorrupt) as raised:
        agent.history(world, "s1")
    assert str(raised.value).startswith(f"{store} (50 bytes) cannot be read: history(world, 's1') raised "
                                        "JSONDecodeError: ")
    assert raised.value.hint == "A save was cut off; an atomic save (temp file, fsync, rename) never leaves this."
    no_file = CommandAgent(["my-agent"], history=lambda w, s: json.loads(store.read_text())["turns"])
    assert [str(p) for p in no_file.stored(world, "s1").check()] == [  # a reader with no transcript= to name
        "torn-store: the stored session cannot be read: history(world, 's1') raised JSONDecodeError: Unterminated "
        "string starting at: line 1 column 40 (char 39); a save was cut off part-way"]
    with pytest.raises(ConfigError, match=r"CommandAgent\(history=\.\.\.\) takes a function"):
        CommandAgent(["my-agent"], history="sessions/")


ONE_CRASH = '''
import pytest


@pytest.mark.parametrize("then", [None, "Continue where you left off."])
def test_one_crash(agent_session, scripted_model, then):
    # The crash in the first save ends the first turn; only a resume that works asks for the second.
    scripted_model(SCRIPT_TURNS if then and STORE == "atomic" else SCRIPT_TURNS[:1])
    result = agent_session.crash("Write it to notes.txt.", at="save 1", then=then)
    print(f"RESULT then={then is not None} consistent={result.consistent} | {result.reason}")
    print(result)
'''


@pytest.mark.parametrize("store", ["in place", "atomic"])
def test_one_crash_in_a_save_is_judged_as_crash_everywhere_judges_it(pytester, store):
    """The seed's agent saving in place (`path.write_text`) or atomically, crashed once in its first save: without a
    resume the result is never consistent (nothing has shown a recovery); resumed, the torn store fails its resume
    and is inconsistent, the atomic one resumes to a consistent history."""
    patches = [] if store == "in place" else [(SAVE, ATOMIC)]
    header = f"from conftest import SCRIPT as SCRIPT_TURNS\nSTORE = {store!r}\n"
    result = _seed(pytester, *patches, tests=header + ONE_CRASH)
    result.assert_outcomes(passed=2)
    lines = [line[line.index("RESULT"):] for line in result.outlines if "RESULT then=" in line]
    assert lines[0] == ("RESULT then=False consistent=False | no resume ran after the crash, so nothing says the agent "
                        "recovers: pass then=... to crash() (it resumes and judges), or resume and call "
                        "assert_consistent()")
    if store == "in place":
        assert lines[1].startswith("RESULT then=True consistent=False | ") and "resume-failed" in lines[1], lines
        result.stdout.fnmatch_lines(["save 1 * after the crash: *torn-store*", "*resume failed: *resume-failed*"])
    else:
        assert lines[1] == "RESULT then=True consistent=True | ", lines
        # the first save, cut before anything was stored: the resume starts the session over, whole
        result.stdout.fnmatch_lines(["save 1 * after the crash: consistent", "*started over (nothing was stored): consistent"])
