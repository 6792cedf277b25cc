"""Cassettes nobody here wrote: stock vcrpy (YAML and JSON), pydantic-ai's parsed_body, cassetter's typed bodies;
compressed bodies (gzip event streams, deflate and br) served byte for byte, or decoded for a client that does not
take the coding.  The data is in tests/data/foreign/ (see make_cassettes.py for the shapes)."""

from __future__ import annotations

import gzip
import shutil
import socket
import subprocess
import zlib
from pathlib import Path

import brotli
import pytest
import yaml

from pytest_controlplane import ModelGateway
from pytest_controlplane.cassette import Cassette
from pytest_controlplane.errors import CassetteCorrupt

DATA = Path(__file__).parent / "data"
FOREIGN = DATA / "foreign"
DECODE = {"gzip": gzip.decompress, "deflate": zlib.decompress, "br": brotli.decompress, "": lambda b: b}

# One conversation per interaction of the foreign cassettes: what the SDK sends, and what it must read back.
SDK_USER = '''
import anthropic, pytest

MODEL = "claude-sonnet-4-5-20250929"


@pytest.mark.agent(cassette={cassette!r})
def test_foreign_cassette(model_gateway):
    client = anthropic.Anthropic(base_url=model_gateway.base_url, api_key="unused", max_retries=0)

    def streamed(prompt):
        with client.messages.stream(model=MODEL, max_tokens=256, messages=[{{"role": "user", "content": prompt}}]) as s:
            return s.get_final_message()

    def whole(prompt):
        return client.messages.create(model=MODEL, max_tokens=256, messages=[{{"role": "user", "content": prompt}}])

    first = streamed("Read my notes")
    assert first.content[0].text == "I'll read the notes first."
    assert first.content[1].input == {{"file_path": "/home/user/notes/todo.txt"}}
    assert first.stop_reason == "tool_use"
    assert whole("Say something deflated").content[0].text == "Deflated, and whole."
    assert streamed("Say hello in French").content[0].text == "Bonjour le monde"
    assert streamed("Say hello plainly").content[0].text == "Hello from a plain stream"
    assert whole("Say hello").content[0].text == "Hello! How can I help you today?"
    assert [e.source for e in model_gateway.exchanges] == ["cassette"] * 5
'''


@pytest.mark.parametrize("name", ["vcrpy_compressed.yaml", "vcrpy_plain.json", "pydantic_ai.yaml", "cassetter.yaml"])
def test_a_foreign_cassette_replays_through_the_anthropic_sdk_and_is_left_as_it_was(pytester, name):
    shutil.copy(FOREIGN / name, pytester.path / name)
    before = (pytester.path / name).read_bytes()
    pytester.makepyfile(test_foreign=SDK_USER.format(cassette=name))
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert (pytester.path / name).read_bytes() == before


def _stored(name: str = "vcrpy_compressed.yaml") -> list[dict]:
    return yaml.load((FOREIGN / name).read_text(), Loader=yaml.Loader)["interactions"]


def _http(base_url: str, body: bytes, accept_encoding: str | None) -> tuple[dict[str, str], bytes]:
    """A raw HTTP/1.1 exchange on a socket, so that nothing between us and the gateway decodes anything."""
    host, port = base_url.removeprefix("http://").split(":")
    head = [f"POST /v1/messages HTTP/1.1", f"Host: {host}", "Content-Type: application/json",
            f"Content-Length: {len(body)}", "Connection: close"]
    if accept_encoding is not None:
        head.append(f"Accept-Encoding: {accept_encoding}")
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        raw = b""
        while chunk := connection.recv(65536):
            raw += chunk
    header_block, _, payload = raw.partition(b"\r\n\r\n")
    headers = {}
    for line in header_block.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        payload = _unchunked(payload)
    return headers, payload


def _unchunked(payload: bytes) -> bytes:
    """The chunks joined; as far as they go when the stream was cut."""
    out = b""
    while True:
        size_line, _, payload = payload.partition(b"\r\n")
        if not size_line or int(size_line, 16) == 0:
            return out
        size = int(size_line, 16)
        out, payload = out + payload[:size], payload[size + 2:]


@pytest.mark.parametrize("accept", ["gzip, deflate, br", None, "identity", "gzip;q=0, deflate;q=0, br;q=0"])
def test_every_client_gets_the_stored_content_byte_for_byte_decoded(accept):
    stored = _stored()
    with ModelGateway(mode="replay", cassette=FOREIGN / "vcrpy_compressed.yaml") as gateway:
        for item in stored:
            headers, payload = _http(gateway.base_url, item["request"]["body"].encode(), accept)
            coding = item["response"]["headers"].get("Content-Encoding", [""])[0]
            body = item["response"]["body"]["string"]
            body = body if isinstance(body, bytes) else body.encode()
            if accept == "gzip, deflate, br" or not coding:
                assert headers.get("content-encoding", "") == coding and payload == body  # as stored
            else:
                assert "content-encoding" not in headers and payload == DECODE[coding](body)  # decoded for it
                assert gateway.exchanges[-1].notes == [f"sent decoded: the client does not accept {coding}"]
    assert gateway.problems == []


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("compressed", [True, False])
def test_curl_reads_the_same_content_compressed_or_not(compressed):
    stored = _stored()
    with ModelGateway(mode="replay", cassette=FOREIGN / "vcrpy_compressed.yaml") as gateway:
        for item in stored:
            argv = ["curl", "-sS", "--fail", "-H", "content-type: application/json", "--data-binary", "@-",
                    gateway.base_url + "/v1/messages"] + (["--compressed"] if compressed else [])
            out = subprocess.run(argv, input=item["request"]["body"].encode(), capture_output=True, check=True)
            coding = item["response"]["headers"].get("Content-Encoding", [""])[0]
            body = item["response"]["body"]["string"]
            assert out.stdout == DECODE[coding](body if isinstance(body, bytes) else body.encode())
    assert gateway.problems == []


def test_a_cut_compressed_stream_is_cut_midway():
    """A crash test's interruption still cuts a compressed stream (which is not split into events) halfway."""
    stored = _stored()
    cut = []
    with ModelGateway(mode="replay", cassette=FOREIGN / "vcrpy_compressed.yaml") as gateway:
        gateway.interruptions[0] = lambda: cut.append(True)
        headers, payload = _http(gateway.base_url, stored[0]["request"]["body"].encode(), "gzip")
    assert cut == [True]
    body = stored[0]["response"]["body"]["string"]
    assert headers["content-encoding"] == "gzip" and 0 < len(payload) < len(body) and body.startswith(payload)


def test_reports_and_canary_scans_read_compressed_answers_decoded():
    from pytest_controlplane.canary.surfaces import exchange_surfaces
    from pytest_controlplane.wire import assemble_message

    cassette = Cassette.load(FOREIGN / "vcrpy_compressed.yaml")
    texts = [assemble_message(i.response)["content"][0]["text"] for i in cassette.interactions]
    assert texts == ["I'll read the notes first.", "Deflated, and whole.", "Bonjour le monde",
                     "Hello from a plain stream", "Hello! How can I help you today?"]

    class Exchange:  # what the scan reads of an exchange: its request and the response served
        def __init__(self, interaction):
            self.request = type("R", (), {"body": interaction.body, "headers": {}})()
            self.response = interaction.response

    surfaces = [s for i in cassette.interactions for s in exchange_surfaces(0, Exchange(i)) if s.kind == "response"]
    assert any(b"/home/user/notes/todo.txt" in s.data for s in surfaces)  # the tool input, whole again


@pytest.mark.parametrize("content, what", [
    ("interactions: [{request: {method: POST}, response: {}}]", "interaction 0: the request has no `uri`"),
    ("interactions:\n- request: {method: POST, uri: 'http://x/v1/messages', body: {shape: 1}}\n"
     "  response: {status: {code: 200}, body: {string: ''}}",
     "interaction 0: the request body is a dict with keys ['shape']"),
    ("interactions:\n- request: {method: POST, uri: 'http://x/v1/messages', body: ''}\n"
     "  response: {status: {code: 200}, body: {type: xml, content: ''}}",
     "interaction 0: the response body has type 'xml' (known: json, text, binary, none)"),
    ("interactions:\n- request: {method: POST, uri: 'http://x/v1/messages', body: ''}\n  response: {status: ok}",
     "interaction 0: the response has no status code (found 'ok')"),
    ("- request: {}\n  response: {}", "it is in the format of vcrpy before 1.0"),
    ("requests: []", "it has no `interactions` list (found ['requests'])"),
])
def test_a_cassette_in_no_known_shape_fails_with_its_path_and_what_was_not_understood(tmp_path, content, what):
    path = tmp_path / "odd.yaml"
    path.write_text(content)
    with pytest.raises(CassetteCorrupt) as failure:
        Cassette.load(path)
    assert f"Cassette {path} cannot be loaded: {what}" in str(failure.value)
    assert path.read_text() == content
