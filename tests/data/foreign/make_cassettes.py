"""Write the foreign cassettes of tests/data/foreign/ (run by hand: `python tests/data/foreign/make_cassettes.py`).

Each file is in the shape another tool writes when it records the Anthropic Messages API, with bodies in the
shapes the real API sends (a gzip-compressed event stream for an httpx client, split input_json_delta events,
ping events, the real headers) — written here, with made-up ids, not recorded from the API:

- vcrpy_compressed.yaml   stock vcrpy YAML serializer: gzip SSE, deflate JSON, br SSE and gzip JSON as
                          `!!binary`, a plain SSE body as a string
- vcrpy_plain.json        stock vcrpy JSON serializer (bodies are strings; vcrpy's JSON cannot hold bytes)
- pydantic_ai.yaml        pydantic-ai's vcrpy serializer: JSON bodies as `parsed_body` mappings, SSE as literal text
- cassetter.yaml          pydantic-ai's later recorder: `body: {type: json|text, content}`, `status: 200`
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import brotli
import yaml
from vcr.request import Request
from vcr.serialize import serialize
from vcr.serializers import jsonserializer, yamlserializer

HERE = Path(__file__).parent
MODEL = "claude-sonnet-4-5-20250929"
URI = "https://api.anthropic.com/v1/messages"

# What the real API sends with a response (ids made up; request-id and organization id are what scrubbing removes).
API_HEADERS = {
    "Date": ["Mon, 30 Nov 2026 09:12:01 GMT"], "Connection": ["keep-alive"], "Transfer-Encoding": ["chunked"],
    "CF-RAY": ["9a4b2f0a9c1d7e3f-CDG"], "CF-Cache-Status": ["DYNAMIC"], "Server": ["cloudflare"],
    "X-Robots-Tag": ["none"], "via": ["1.1 google"],
    "anthropic-ratelimit-requests-limit": ["50"], "anthropic-ratelimit-requests-remaining": ["49"],
    "anthropic-ratelimit-input-tokens-limit": ["30000"], "anthropic-ratelimit-input-tokens-remaining": ["30000"],
    "strict-transport-security": ["max-age=31536000; includeSubDomains; preload"],
}


def request_body(content: str, *, stream: bool) -> str:
    body = {"max_tokens": 256, "messages": [{"role": "user", "content": content}], "model": MODEL}
    if stream:
        body["stream"] = True
    return json.dumps(body, separators=(",", ":"))


def message(message_id: str, content: list[dict], stop: str, output_tokens: int) -> dict:
    return {"id": message_id, "type": "message", "role": "assistant", "model": MODEL, "content": content,
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 21, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                      "output_tokens": output_tokens, "service_tier": "standard"}}


def stream(message_id: str, blocks: list[tuple[str, list[str]]], stop: str) -> str:
    """An event stream as the API sends it: message_start, a ping, each block started, its deltas, stopped."""
    def event(name: str, data: dict) -> str:
        return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"

    start = message(message_id, [], "", 1)
    start["stop_reason"] = None
    out = [event("message_start", {"type": "message_start", "message": start}),
           event("ping", {"type": "ping"})]
    for index, (kind, pieces) in enumerate(blocks):
        if kind == "text":
            block, delta = {"type": "text", "text": ""}, "text_delta"
        else:
            block = {"type": "tool_use", "id": f"toolu_01FAKE{index:02d}", "name": kind, "input": {}}
            delta = "input_json_delta"
        out.append(event("content_block_start", {"type": "content_block_start", "index": index,
                                                 "content_block": block}))
        for piece in pieces:
            field = "text" if delta == "text_delta" else "partial_json"
            out.append(event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                     "delta": {"type": delta, field: piece}}))
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                       "usage": {"output_tokens": 42}}))
    out.append(event("message_stop", {"type": "message_stop"}))
    return "".join(out)


SSE_TOOL = stream("msg_01FAKEGZIPSTREAM00000001",
                  [("text", ["I'll read", " the notes", " first."]),
                   ("Read", ['{"file_', 'path": "/home/u', 'ser/notes/to', 'do.txt"}'])], "tool_use")
SSE_TEXT = stream("msg_01FAKEBRSTREAM0000000002", [("text", ["Bon", "jour", " le monde"])], "end_turn")
SSE_PLAIN = stream("msg_01FAKEPLAINSTREAM000003", [("text", ["Hello", " from", " a plain stream"])], "end_turn")
JSON_DEFLATE = message("msg_01FAKEDEFLATE0000000004", [{"type": "text", "text": "Deflated, and whole."}],
                       "end_turn", 6)
JSON_GZIP = message("msg_01FAKEGZIPJSON000000005", [{"type": "text", "text": "Hello! How can I help you today?"}],
                    "end_turn", 10)

# (prompt, stream?, response body as the client reads it, content coding, content type)
INTERACTIONS = [
    ("Read my notes", True, SSE_TOOL, "gzip", "text/event-stream; charset=utf-8"),
    ("Say something deflated", False, json.dumps(JSON_DEFLATE, separators=(",", ":")), "deflate", "application/json"),
    ("Say hello in French", True, SSE_TEXT, "br", "text/event-stream; charset=utf-8"),
    ("Say hello plainly", True, SSE_PLAIN, "", "text/event-stream; charset=utf-8"),
    ("Say hello", False, json.dumps(JSON_GZIP, separators=(",", ":")), "gzip", "application/json"),
]


def encoded(text: str, coding: str) -> bytes | str:
    data = text.encode()
    if coding == "gzip":
        return gzip.compress(data, mtime=0)
    if coding == "deflate":
        return zlib.compress(data)
    if coding == "br":
        return brotli.compress(data)
    return text


def vcrpy_cassette(*, codings: bool) -> dict:
    requests, responses = [], []
    for prompt, is_stream, body, coding, content_type in INTERACTIONS:
        coding = coding if codings else ""
        headers = {"accept": "application/json", "accept-encoding": "gzip, deflate, br" if codings else "identity",
                   "anthropic-version": "2023-06-01", "content-type": "application/json",
                   "host": "api.anthropic.com", "user-agent": "Anthropic/Python 0.75.0"}
        requests.append(Request("POST", URI, request_body(prompt, stream=is_stream), headers))
        response_headers = {**{k: list(v) for k, v in API_HEADERS.items()}, "Content-Type": [content_type]}
        if coding:
            response_headers["Content-Encoding"] = [coding]
        if is_stream:
            response_headers["Cache-Control"] = ["no-cache"]
        responses.append({"status": {"code": 200, "message": "OK"}, "headers": response_headers,
                          "body": {"string": encoded(body, coding)}})
    return {"requests": requests, "responses": responses}


class _Literal(yaml.SafeDumper):
    pass


_Literal.add_representer(str, lambda dumper, data: dumper.represent_scalar(
    "tag:yaml.org,2002:str", data, style="|" if "\n" in data else None))


def parsed_body_cassette() -> dict:
    interactions = []
    for prompt, is_stream, body, _, content_type in INTERACTIONS:
        request = {"headers": {"accept": ["application/json"], "content-type": ["application/json"],
                               "host": ["api.anthropic.com"]},
                   "method": "POST", "parsed_body": json.loads(request_body(prompt, stream=is_stream)), "uri": URI}
        response = {"headers": {"content-type": [content_type], "transfer-encoding": ["chunked"]},
                    "status": {"code": 200, "message": "OK"}}
        if content_type == "application/json":
            response["parsed_body"] = json.loads(body)
        else:
            response["body"] = {"string": body}
        interactions.append({"request": request, "response": response})
    return {"interactions": interactions, "version": 1}


def cassetter_cassette() -> dict:
    interactions = []
    for prompt, is_stream, body, _, content_type in INTERACTIONS:
        is_json = content_type == "application/json"
        interactions.append({
            "request": {"method": "POST", "uri": URI + "?beta=true",
                        "headers": {"accept": ["application/json"], "content-type": ["application/json"]},
                        "body": {"type": "json", "content": json.loads(request_body(prompt, stream=is_stream))}},
            "response": {"status": 200, "headers": {"content-type": [content_type]},
                         "body": {"type": "json", "content": json.loads(body)} if is_json
                         else {"type": "text", "content": body}},
            "recorded_at": "2026-11-30T09:12:01.000000+00:00"})
    return {"version": 1, "interactions": interactions}


def main() -> None:
    note = "# Written by tests/data/foreign/make_cassettes.py in the shape {}; made-up ids, not recorded from the API.\n"
    (HERE / "vcrpy_compressed.yaml").write_text(
        note.format("stock vcrpy's YAML serializer writes") + serialize(vcrpy_cassette(codings=True), yamlserializer))
    (HERE / "vcrpy_plain.json").write_text(serialize(vcrpy_cassette(codings=False), jsonserializer))
    (HERE / "pydantic_ai.yaml").write_text(note.format("pydantic-ai's vcrpy serializer writes (parsed_body)") + yaml.dump(
        parsed_body_cassette(), Dumper=_Literal, allow_unicode=True, width=120))
    (HERE / "cassetter.yaml").write_text(note.format("cassetter writes (typed bodies)") + yaml.dump(
        cassetter_cassette(), Dumper=_Literal, allow_unicode=True, width=120, sort_keys=False))


if __name__ == "__main__":
    main()
