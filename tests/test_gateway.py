"""The gateway as a library (no pytest wiring): wire format, modes, templating, saving."""

from __future__ import annotations

import importlib.metadata
import json
import socket
import sys
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path
from types import FunctionType

import anthropic
import pytest
import yaml
from sse_join import events
from standin import StandIn, two_turn_tool_conversation

import pytest_controlplane
from pytest_controlplane import ModelGateway, ScriptedModel, text, tool_use
from pytest_controlplane.config import resolve_mode
from pytest_controlplane.errors import ConfigError
from pytest_controlplane import wire
from pytest_controlplane.cassette.matching import match_key
from pytest_controlplane.gateway.templating import Templater

LONG_PATH = "/tmp/some/where/deep/workspace/notes/a-rather-long-file-name.txt"


def post(url: str, payload: object) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_scripted_stream_splits_deltas_and_the_sdk_joins_them():
    model = ScriptedModel([tool_use("write_note", {"path": LONG_PATH, "text": "hi"}), text("finished, all good")])
    with ModelGateway(mode="script", script=model) as gateway:
        client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
        kwargs = dict(model="claude-opus-5-5", max_tokens=64, messages=[{"role": "user", "content": "go"}])
        with client.messages.stream(**kwargs) as stream:
            first = stream.get_final_message()
        with client.messages.stream(**kwargs) as stream:
            second = stream.get_final_message()
    assert first.stop_reason == "tool_use" and first.content[0].input == {"path": LONG_PATH, "text": "hi"}
    assert second.stop_reason == "end_turn" and second.content[0].text == "finished, all good"
    deltas = [d for name, d in events(gateway.exchanges[0].body.decode()) if name == "content_block_delta"]
    assert len(deltas) > 5 and not any(LONG_PATH in d["delta"]["partial_json"] for d in deltas)
    assert model.remaining == 0


def test_count_tokens_and_unknown_paths():
    with ModelGateway(mode="script", script=ScriptedModel([])) as gateway:
        status, body = post(gateway.base_url + "/v1/messages/count_tokens", {"messages": []})
        assert status == 200 and body["input_tokens"] >= 1
        status, body = post(gateway.base_url + "/v1/complete", {})
        assert status == 404 and body["error"]["type"] == "not_found_error"
        assert "serves POST /v1/messages and /v1/messages/count_tokens only, not POST /v1/complete" in \
            body["error"]["message"]
    assert gateway.problems == []


def test_any_http_client_is_served_keep_alive_http_1_0_and_expect_continue():
    """The gateway reads requests itself (not with http.server's email parser): keep-alive, header names in any
    case, HTTP/1.0, and curl's `Expect: 100-continue` must all still work."""
    body = json.dumps({"messages": []}).encode()

    def exchange(sock: socket.socket, request: bytes) -> bytes:
        sock.sendall(request)
        answer = b""
        while b"input_tokens" not in answer:
            chunk = sock.recv(65536)
            assert chunk, answer
            answer += chunk
        return answer

    with ModelGateway(mode="script", script=ScriptedModel([])) as gateway:
        address = ("127.0.0.1", int(gateway.base_url.rsplit(":", 1)[1]))
        with socket.create_connection(address) as sock:
            for name in ("Content-Length", "content-length"):  # two requests on one connection
                answer = exchange(sock, b"POST /v1/messages/count_tokens HTTP/1.1\r\nHost: x\r\n%s: %d\r\n\r\n%s"
                                  % (name.encode(), len(body), body))
                assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length:" in answer
        with socket.create_connection(address) as sock:
            answer = exchange(sock, b"POST /v1/messages/count_tokens HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s"
                              % (len(body), body))
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        with socket.create_connection(address) as sock:
            sock.sendall(b"POST /v1/messages/count_tokens HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body))
            assert sock.recv(65536).startswith(b"HTTP/1.1 100 Continue\r\n")
            assert exchange(sock, body).startswith(b"HTTP/1.1 200 OK\r\n")
    assert [e.status for e in gateway.exchanges] == [200] * 4 and all(e.seconds > 0 for e in gateway.exchanges)


def test_an_answer_the_client_stops_reading_is_named_not_waited_for_forever(monkeypatch):
    """A client that stops reading a long answer: its time raises (saying so) and closing the gateway notes it, each
    after ANSWER_WAIT, instead of hanging; once the client goes, the server thread ends."""
    monkeypatch.setattr(wire, "ANSWER_WAIT", 0.2)
    body = json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "go"}]}).encode()
    with ModelGateway(mode="script", script=ScriptedModel([text("x" * 8_000_000)])) as gateway:
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.connect(("127.0.0.1", int(gateway.base_url.rsplit(":", 1)[1])))
        client.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        deadline = time.monotonic() + 30
        while not gateway.exchanges and time.monotonic() < deadline:  # the answer is made before it is sent
            time.sleep(0.01)
        with pytest.raises(TimeoutError, match="POST /v1/messages 0.2 s later.*stopped reading"):
            gateway.exchanges[0].seconds
    assert gateway.exchanges[0].notes == ["still being sent 0.2 s after the gateway closed (the client stopped reading)"]
    client.close()
    assert gateway.exchanges[0].served.wait(30), "the server thread did not end when its client went away"


def test_templating_joins_split_deltas_and_round_trips():
    templater = Templater({"workspace": "/tmp/some/where/deep/workspace"})
    model = ScriptedModel([tool_use("Write", {"file_path": LONG_PATH})])
    with ModelGateway(mode="script", script=model) as gateway:
        client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
        with client.messages.stream(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}]) as s:
            s.get_final_message()
    response = gateway.exchanges[0].response
    stored = templater.template_response(response)
    body = stored["body"]["string"].decode()
    assert "{{workspace}}/notes/a-rather-long-file-name.txt" in body and "/tmp/some" not in body
    other = Templater({"workspace": "/elsewhere/ws"}).expand_response(stored)["body"]["string"].decode()
    joined_input = "".join(d["delta"]["partial_json"] for n, d in events(other) if n == "content_block_delta")
    assert json.loads(joined_input) == {"file_path": "/elsewhere/ws/notes/a-rather-long-file-name.txt"}


def test_templater_covers_realpath_and_slug(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    templater = Templater({"workspace": tmp_path / "link"})
    slug = str(tmp_path / "link").replace("/", "-").replace("_", "-")
    text_ = f"{tmp_path / 'link'}/a {real}/b projects/{slug}/c".encode()
    assert templater.template_body(text_) == b"{{workspace}}/a {{workspace}}/b projects/{{workspace:slug}}/c"


def test_match_key_ignores_what_varies_between_identical_runs():
    def body(date: str, user: str, cache: bool) -> bytes:
        block = {"type": "text", "text": f"Today's date is {date}.\n - OS Version: Linux {user}"}
        if cache:
            block["cache_control"] = {"type": "ephemeral"}
        return json.dumps({"model": "m", "metadata": {"user_id": user}, "system": [block],
                           "messages": [{"role": "user", "content": "hi"}]}).encode()

    assert match_key("POST", "/v1/messages", body("2026-01-01", "a", True)) == \
        match_key("POST", "/v1/messages", body("2027-12-31", "b", False))
    changed = json.loads(body("2026-01-01", "a", True))
    changed["messages"][0]["content"] = "hello"
    assert match_key("POST", "/v1/messages", body("2026-01-01", "a", True)) != \
        match_key("POST", "/v1/messages", json.dumps(changed).encode())


def test_live_mode_forwards_and_stores_nothing(tmp_path):
    """Given a cassette that already holds the answer, live mode still asks the upstream API, and leaves the
    cassette byte for byte as it was: nothing is read from it, nothing added, no file appears beside it."""
    cassette = tmp_path / "live.yaml"
    key = "sk-ant-live-key-1234567890"
    conversation = two_turn_tool_conversation("write_note", "path", {"text": "x"})

    def ask(gateway: ModelGateway):
        client = anthropic.Anthropic(base_url=gateway.base_url, api_key="dummy", max_retries=0)
        return client.messages.create(model="m", max_tokens=8, system="workspace=/w",
                                      messages=[{"role": "user", "content": "x"}])

    with StandIn(conversation, api_key=key) as api:
        with ModelGateway(mode="record", cassette=cassette, upstream=api.url, api_key=key) as recorder:
            ask(recorder)
        recorded = cassette.read_bytes()
        with ModelGateway(mode="live", cassette=cassette, upstream=api.url, api_key=key) as gateway:
            reply = ask(gateway)
    assert reply.content[1].input["path"] == "/w/notes/hello.txt"
    assert len(api.requests) == 2  # live asked upstream although the cassette holds this very request
    assert api.requests[1][0]["x-api-key"] == key  # the real key replaced the agent's
    assert [(e.source, e.interaction) for e in gateway.exchanges] == [("upstream", None)]
    assert cassette.read_bytes() == recorded
    assert [p.name for p in tmp_path.iterdir()] == ["live.yaml"]


def test_auto_mode_records_what_is_missing_then_replays_offline(tmp_path):
    cassette = tmp_path / "auto.yaml"
    conversation = two_turn_tool_conversation("write_note", "path", {"text": "x"})

    def ask(gateway: ModelGateway, prompt: str) -> str:
        client = anthropic.Anthropic(base_url=gateway.base_url, api_key="dummy", max_retries=0)
        reply = client.messages.create(model="m", max_tokens=8, system="workspace=/w",
                                       messages=[{"role": "user", "content": prompt}])
        return reply.content[0].text

    with StandIn(conversation, api_key="sk-ant-auto-key-1234567890") as api:
        with ModelGateway(mode="auto", cassette=cassette, upstream=api.url, api_key="sk-ant-auto-key-1234567890") as g:
            ask(g, "first")
        with ModelGateway(mode="auto", cassette=cassette, upstream=api.url, api_key="sk-ant-auto-key-1234567890") as g:
            ask(g, "first")
            ask(g, "second")
        assert len(api.requests) == 2  # "first" came from the cassette the second time
    assert [e.source for e in g.exchanges] == ["cassette", "upstream"]
    with ModelGateway(mode="replay", cassette=cassette) as g:  # the stand-in is gone
        ask(g, "first")
        ask(g, "second")
    g.check()
    assert len(yaml.safe_load(cassette.read_text())["interactions"]) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["auto.yaml"]  # the atomic save left no temporary file


def test_mode_precedence_marker_cli_env_ini():
    assert resolve_mode(marker=None, cli=None, env=None, ini=None) == "replay"
    assert resolve_mode(marker=None, cli=None, env=None, ini="live") == "live"
    assert resolve_mode(marker=None, cli=None, env="auto", ini="live") == "auto"
    assert resolve_mode(marker=None, cli="record", env="auto", ini="live") == "record"
    assert resolve_mode(marker="replay", cli="record", env="auto", ini="live") == "replay"
    with pytest.raises(ConfigError, match="valid modes: replay, record, auto, live"):
        resolve_mode(marker=None, cli=None, env="nope", ini=None)


def test_gateway_refuses_bad_arguments():
    with pytest.raises(ConfigError, match="Unknown gateway mode 'replya'; valid modes: replay, record, auto, live"):
        ModelGateway(mode="replya")
    with pytest.raises(ConfigError, match=r"mode='replay' needs cassette=PATH"):
        ModelGateway(mode="replay")


def test_public_names_are_exported():
    """Each public name is the class or function of that name, as defined in the module that owns it (not some
    other object a lazy import table points at); `import *` gives exactly __all__; the version is the package's."""
    for name in set(pytest_controlplane.__all__) - {"__version__"}:
        exported = getattr(pytest_controlplane, name)
        assert isinstance(exported, type | FunctionType), (name, exported)
        assert exported.__name__ == name and exported.__module__.startswith("pytest_controlplane."), (name, exported)
        assert getattr(sys.modules[exported.__module__], name) is exported, name
    assert pytest_controlplane.__version__ == importlib.metadata.version("pytest-controlplane")
    star: dict[str, object] = {}
    exec("from pytest_controlplane import *", star)  # noqa: S102
    assert set(star) - {"__builtins__"} == set(pytest_controlplane.__all__)
    assert {"ModelGateway", "ScriptedModel", "text", "tool_use", "World"} <= set(pytest_controlplane.__all__)


def test_every_exception_is_a_verdict_or_an_error_under_its_root():
    """Two roots, as errors.py draws them: a verdict (the control plane did not hold) is a ControlPlaneFailure, an
    AssertionError; everything else we raise is a ControlPlaneError, but for a skip and the signal that stops an agent
    in a crash test, which errors.py names apart."""
    verdicts = {"EffectViolation", "CanaryLeaked", "BypassSucceeded", "BypassInconclusive", "HistoryInconsistent"}
    exceptions = {name for name in pytest_controlplane.__all__ if name != "__version__"
                  and isinstance(getattr(pytest_controlplane, name), type)
                  and issubclass(getattr(pytest_controlplane, name), BaseException)}
    assert issubclass(pytest_controlplane.VariantNotApplicable, unittest.SkipTest)
    assert not issubclass(pytest_controlplane.SimulatedCrash, Exception)
    exceptions -= {"VariantNotApplicable", "SimulatedCrash"}
    warned = {name for name in exceptions if issubclass(getattr(pytest_controlplane, name), Warning)}
    assert warned == {"SandboxNotRunning"}  # a warning says what a run could not do, and fails nothing
    exceptions -= warned
    assert verdicts < exceptions
    for name in exceptions:
        exception = getattr(pytest_controlplane, name)
        if name in verdicts:
            assert issubclass(exception, pytest_controlplane.ControlPlaneFailure), name
            assert issubclass(exception, AssertionError), name
        elif name != "ControlPlaneFailure":
            assert issubclass(exception, pytest_controlplane.ControlPlaneError), name
        assert name in pytest_controlplane.errors.__doc__, f"{name} is missing from the tree in errors.py"


def test_plugin_import_stays_cheap():
    import subprocess
    import sys

    code = ("import sys, pytest_controlplane.plugin; "
            "print(sorted(m for m in ('anthropic', 'claude_agent_sdk', 'vcr', 'hypothesis', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _raw(address: tuple[str, int], request: bytes) -> tuple[int, dict]:
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), None)
            if length is not None and len(body) >= length:
                break
    status = int(answer.split(b" ", 2)[1])
    return status, json.loads(body)


@pytest.mark.parametrize(("request_bytes", "says"), [
    (b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}", "Content-Length 'abc'"),
    (b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n{}", "Content-Length '-5'"),
    (b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
     "a chunk size b'zz'"),
    (b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot json!",
     "not a JSON object"),
    (b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]",
     "not a JSON object"),
])
def test_a_malformed_request_gets_a_400_in_the_apis_shape_and_the_gateway_keeps_serving(request_bytes, says, capfd):
    model = ScriptedModel([text("still here")])
    with ModelGateway(mode="script", script=model) as gateway:
        address = ("127.0.0.1", int(gateway.base_url.rsplit(":", 1)[1]))
        status, body = _raw(address, request_bytes)
        assert status == 400 and body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        assert says in body["error"]["message"]
        # The next client is served as usual; a chunked body is read too.
        payload = json.dumps({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]})
        status, body = _raw(address, b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                     b"Connection: close\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(payload), payload.encode()))
        assert status == 200 and body["content"][0]["text"] == "still here"
    assert gateway.problems == [] and model.remaining == 0
    assert "Traceback" not in capfd.readouterr().err


def test_the_clis_safety_classifier_is_answered_allow_without_using_an_agent_turn():
    """CLI 2.1.300 asks the model for its auto-mode safety check (cli_facts.CLASSIFIER_REQUEST): the scripted model
    answers it "allow" and keeps its turns for the agent; a request that only mentions severity is an agent turn."""
    def request(last: str, index: int) -> wire.ModelRequest:
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text", "text": last}]}]}
        return wire.ModelRequest("POST", "/v1/messages", {}, json.dumps(body).encode(), index=index)

    model = ScriptedModel([text("the agent's only turn")])
    asked = "<transcript>\n{\"Bash\":\"env | grep DB_\"}\n</transcript>\nRespond with <severity>N</severity> ONLY."
    for index in range(2):  # the classifier may ask more than once per call
        answer = json.loads(model.respond(request(asked, index))["body"]["string"])
        assert answer["content"] == [{"type": "text", "text": "<severity>0</severity>"}]
    assert model.remaining == 1
    answer = json.loads(model.respond(request("what is a <severity> tag?", 2))["body"]["string"])
    assert answer["content"][0]["text"] == "the agent's only turn" and model.remaining == 0
