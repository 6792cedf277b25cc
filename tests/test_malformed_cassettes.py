"""Bad cassettes fail alone: a recorded answer that is malformed (a torn or non-JSON line, a missing, extra or
misplaced event, a body of the wrong type, a gzip body that does not inflate) fails its own test with CassetteCorrupt
naming the file, the interaction, the line and the fix, before the agent runs; the module's other tests run and pass,
the session ends normally (exit 1, never INTERNALERROR's 3), and the cassette is left as it was.
`controlplane cassettes check` names the same problems, and is quiet for an intact cassette."""

from __future__ import annotations

import fnmatch
import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from pytest_controlplane import ModelGateway, ScriptedModel, text, tool_use
from pytest_controlplane.answers import read
from pytest_controlplane.cli import main

# An agent of a few lines on the anthropic SDK, streaming as the Claude Code CLI does.
ASK = '''
import anthropic


def ask(gateway, prompt):
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-agent-dummy", max_retries=0)
    with client.messages.stream(model="claude-opus-5-5", max_tokens=256,
                                messages=[{"role": "user", "content": prompt}]) as stream:
        return stream.get_final_message()
'''
TESTS = ASK + '''

def test_broken(model_gateway):
    answer = ask(model_gateway, "Save my note.")
    assert answer.content[0].text == "Saving it now." and answer.content[1].input == {"path": "notes/todo.txt"}


def test_intact(model_gateway):
    answer = ask(model_gateway, "Save my note.")
    assert answer.content[0].text == "Saving it now." and answer.content[1].input == {"path": "notes/todo.txt"}
'''


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cassette of ASK's one request, recorded through the gateway from a scripted stand-in API."""
    path = tmp_path_factory.mktemp("recorded") / "cassette.yaml"
    namespace: dict = {}
    exec(ASK, namespace)
    turn = [text("Saving it now."), tool_use("write_file", {"path": "notes/todo.txt"})]
    with ModelGateway(mode="script", script=ScriptedModel([turn])) as stand_in:
        with ModelGateway(mode="record", cassette=path, upstream=stand_in.base_url) as gateway:
            namespace["ask"](gateway, "Save my note.")
    return path


def _events(response: dict) -> list[str]:
    return response["body"]["string"].rstrip("\n").split("\n\n")


def _set_events(response: dict, events: list[str]) -> None:
    response["body"]["string"] = "\n\n".join(events) + "\n\n"


def _edit_events(change: Callable[[list[str]], None]) -> Callable[[dict], None]:
    def edit(response: dict) -> None:
        events = _events(response)
        change(events)
        _set_events(response, events)

    return edit


def _drop_brace(response: dict) -> None:
    """The reported case: the closing brace of the content_block_start data line is gone."""
    body = response["body"]["string"]
    start = body.index('data: {"type":"content_block_start"')
    end = body.index("\n", start)
    response["body"]["string"] = body[: end - 1] + body[end:]


def _truncate(response: dict) -> None:
    body = response["body"]["string"]
    response["body"]["string"] = body[: body.index('data: {"type":"content_block_delta"') + 40]


def _swap(first: int, second: int) -> Callable[[list[str]], None]:
    def swap(events: list[str]) -> None:
        events[first], events[second] = events[second], events[first]

    return swap


def _drop_tool_block_start(events: list[str]) -> None:
    events.remove(next(e for e in events if '"content_block":{"type":"tool_use"' in e))


def _html(response: dict) -> None:
    response["headers"]["content-type"] = ["text/html; charset=utf-8"]
    response["body"]["string"] = "<html><body><h1>502 Bad Gateway</h1></body></html>\n"


def _json_as_stream(response: dict) -> None:
    response["body"]["string"] = json.dumps({"type": "message", "role": "assistant", "content": []})


def _torn_gzip(response: dict) -> None:
    packed = gzip.compress(response["body"]["string"].encode())
    response["body"]["string"] = packed[: len(packed) // 2]
    response["headers"]["Content-Encoding"] = ["gzip"]


# kind -> (how the recorded answer is broken, the flaw named: "interaction #0, " + this)
MALFORMED = {
    "a data line without its closing brace": (
        _drop_brace,
        "line 5 of its response body: the data is not JSON: Expecting ',' delimiter (column 88): "
        '`…"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}`',
    ),
    "a stream cut midway through a line": (
        _truncate,
        "line 8 of its response body: the data is not JSON: Unterminated string starting at (column 37): "
        '`data: {"type":"content_block_delta","ind`',
    ),
    "no message_start": (
        _edit_events(lambda events: events.pop(0)),
        "line 2 of its response body: content_block_start before message_start (the stream must begin with "
        'message_start): `data: {"type":"content_block_start",*`',
    ),
    "a delta for a block never started": (
        _edit_events(_drop_tool_block_start),
        'line * of its response body: content_block_delta for block 1, which never started: `data: {"type":*`',
    ),
    "no message_stop": (
        _edit_events(lambda events: events.pop()),
        "line * of its response body: the stream ends without message_stop (cut short?): "
        '`data: {"type":"message_delta",*`',
    ),
    "message_delta after message_stop": (
        _edit_events(_swap(-1, -2)),
        'line * of its response body: message_delta after message_stop: `data: {"type":"message_delta",*`',
    ),
    "an HTML page on a stream": (
        _html,
        "its response body: the request asked for a stream (text/event-stream), but the Content-Type is 'text/html': "
        "`<html><body><h1>502 Bad Gateway</h1></body></html>`",
    ),
    "JSON where an event stream is declared": (
        _json_as_stream,
        "line 1 of its response body: the body is JSON, not the event stream its Content-Type says: "
        '`{"type": "message", "role": "assistant", "content": []}`',
    ),
    "a gzip body that does not inflate": (
        _torn_gzip,
        "its response body: it cannot be decoded: the body is not valid gzip (EOFError: *)",
    ),
}


def _break(source: Path, target: Path, how: Callable[[dict], None]) -> None:
    data = yaml.safe_load(source.read_text())
    how(data["interactions"][0]["response"])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(data, sort_keys=False))


def _module(root: Path, name: str, recorded: Path, how: Callable[[dict], None] | None) -> Path:
    """Module `name` of TESTS, its test_intact's cassette as recorded and its test_broken's broken by `how`."""
    (root / f"{name}.py").write_text(TESTS)
    broken, intact = root / "cassettes" / name / "test_broken.yaml", root / "cassettes" / name / "test_intact.yaml"
    intact.parent.mkdir(parents=True)
    shutil.copy(recorded, intact)
    if how is None:
        shutil.copy(recorded, broken)
    else:
        _break(recorded, broken, how)
    return broken


def _name(kind: str) -> str:
    return "test_" + "_".join(kind.replace("-", " ").split())


def test_each_malformed_answer_fails_its_own_test_with_where_and_the_fix_and_the_rest_runs_on(pytester, recorded):
    broken = {kind: _module(pytester.path, _name(kind), recorded, how) for kind, (how, _) in MALFORMED.items()}
    before = {kind: path.read_bytes() for kind, path in broken.items()}
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(MALFORMED), errors=len(MALFORMED))  # every test_intact passed
    assert result.ret == 1 and "INTERNALERROR" not in result.stdout.str()
    for kind, (_, flaw) in MALFORMED.items():
        path = broken[kind]
        result.stdout.fnmatch_lines([
            "*ERROR at setup of test_broken*",
            f"CassetteCorrupt: Cassette {path} holds a malformed recorded answer, so replay stops before the agent "
            "runs:",
            f"  interaction #0, {flaw}",
            f"Restore it (`git checkout -- {path}`), record it again: pytest --agent-mode=record *"
            f"'{_name(kind)}.py::test_broken'* — or repair interaction(s) #0 by hand where named (or delete them) "
            f"until `controlplane cassettes check {path}` is quiet.",
        ])
        assert path.read_bytes() == before[kind]  # replay never writes a cassette
    assert "ReplayMiss" not in result.stdout.str()


def test_the_intact_twin_passes(pytester, recorded):
    _module(pytester.path, "test_m", recorded, None)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert "CassetteCorrupt" not in result.stdout.str()


def test_cassettes_check_names_the_same_problems_and_their_fixes(tmp_path, monkeypatch, capsys, recorded):
    monkeypatch.chdir(tmp_path)
    for kind, (how, _) in MALFORMED.items():
        _module(tmp_path, _name(kind), recorded, how)
    assert main(["cassettes", "check", "cassettes"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith(f"{2 * len(MALFORMED)} cassette(s) checked, ")
    assert {line.split(":")[0] for line in lines[:-1] if not line.startswith(" ")} == {
        f"cassettes/{_name(kind)}/test_broken.yaml" for kind in MALFORMED
    }  # and nothing in an intact one
    for kind, (_, flaw) in MALFORMED.items():
        path = f"cassettes/{_name(kind)}/test_broken.yaml"
        found = lines.index(next(line for line in lines if line.startswith(f"{path}: ")))
        assert fnmatch.fnmatch(lines[found], f"{path}: malformed answer: interaction #0, {flaw}")
        assert lines[found + 1] == (
            f"  fix: Restore it (`git checkout -- {path}`), record it again: pytest --agent-mode=record "
            f"'{_name(kind)}.py::test_broken' — or repair interaction(s) #0 by hand where named (or delete them) "
            f"until `controlplane cassettes check {path}` is quiet."
        )


def test_cassettes_check_is_quiet_for_an_intact_cassette(tmp_path, monkeypatch, capsys, recorded):
    monkeypatch.chdir(tmp_path)
    _module(tmp_path, "test_m", recorded, None)
    assert main(["cassettes", "check", "cassettes"]) == 0
    assert capsys.readouterr().out.splitlines() == ["2 cassette(s) checked, 0 finding(s)"]


def _stream(*events: dict) -> dict:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return {"status": {"code": 200}, "headers": {"content-type": ["text/event-stream"]}, "body": {"string": body}}


START = {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [], "usage": {}}}
STOP = {"type": "message_stop"}


@pytest.mark.parametrize("events", [
    pytest.param([START, {"type": "ping"}, {"type": "error", "error": {"type": "overloaded_error"}}],
                 id="an error event"),
    pytest.param([START, {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
                  {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hm."}},
                  {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s"}},
                  {"type": "content_block_stop", "index": 0}, STOP], id="thinking, signed"),
    pytest.param([START, {"type": "content_block_start", "index": 0,
                          "content_block": {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}},
                  {"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": '{"query": "x"}'}},
                  {"type": "content_block_stop", "index": 0}, STOP], id="a server tool"),
    pytest.param([START, {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                  {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {}}},
                  {"type": "content_block_stop", "index": 0}, {"type": "a_future_event"}, STOP],
                 id="delta and event types of the API's next versions"),
])
def test_what_the_api_sends_is_never_called_malformed(events):
    assert read(_stream(*events), streamed=True).flaws == []
