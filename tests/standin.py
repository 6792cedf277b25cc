"""A local stand-in for the Anthropic Messages API, written independently of the gateway.

It plays a two-turn tool conversation: first a tool call whose input holds a path in the
agent's workspace (found in the request), then a text answer that repeats the path.  Like the
real API it requires an API key, sends request and organisation ids and cookies, interleaves
`ping` events, and splits streamed deltas at its own (seeded, irregular) points — so the
gateway's templating has to join them.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ORG_ID = "org-standin-0f3c9a7e-6b1d-4d2e-9c55-aa1e0c7d9b10"


def find_workspace(body: dict[str, Any]) -> str:
    """The workspace path the agent announced: Claude Code's environment block or our loop's system prompt."""
    text = json.dumps(body)
    match = re.search(r"Primary working directory: ([^\s\\\"]+)", text) or re.search(r"workspace=([^\s\\\"]+)", text)
    assert match, "the stand-in found no workspace path in the request"
    return match.group(1)


def two_turn_tool_conversation(tool: str, path_field: str, extra: dict[str, Any]) -> Callable[[dict[str, Any]], list]:
    def turn(body: dict[str, Any]) -> list[dict[str, Any]]:
        workspace = find_workspace(body)
        answered = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if answered == 0:
            return [{"type": "text", "text": "I will write the note now."},
                    {"type": "tool_use", "id": "toolu_standin_01", "name": tool,
                     "input": {path_field: f"{workspace}/notes/hello.txt", **extra}}]
        return [{"type": "text", "text": f"Done: the note is at {workspace}/notes/hello.txt and says hello."}]
    return turn


class StandIn:
    """`with StandIn(conversation, api_key=...) as api:` — `api.url` while open; `api.requests` afterwards."""

    def __init__(self, conversation: Callable[[dict[str, Any]], list], *, api_key: str, seed: int = 7,
                 troubles: list[str] | None = None) -> None:
        """`troubles`: what goes wrong with the first requests, one each, as a busy API does: "529" / "429" /
        "503" (an error answer, with `retry-after: 0`), "drop" (the connection closed, no answer), "cut" (half the
        stream, then a closed connection)."""
        self.conversation = conversation
        self.troubles = list(troubles or [])
        self.api_key = api_key
        self.random = random.Random(seed)
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.count = 0

    def __enter__(self) -> StandIn:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                standin.requests.append((dict(self.headers.items()), body))
                if self.headers.get("x-api-key") != standin.api_key:
                    return self._reply(401, "application/json", json.dumps(
                        {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
                    ).encode())
                trouble = standin.troubles.pop(0) if standin.troubles else None
                if trouble == "drop":
                    self.close_connection = True
                    return
                if trouble and trouble.isdigit():
                    kind = {"429": "rate_limit_error", "529": "overloaded_error"}.get(trouble, "api_error")
                    return self._reply(int(trouble), "application/json", json.dumps(
                        {"type": "error", "error": {"type": kind, "message": f"stand-in {trouble}"}}).encode(),
                        retry_after="0")
                standin.count += 1
                content = standin.conversation(body)
                stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
                message = {"id": f"msg_standin_{standin.count:02d}", "type": "message", "role": "assistant",
                           "model": body["model"], "content": content, "stop_reason": stop, "stop_sequence": None,
                           "usage": {"input_tokens": 120, "output_tokens": 40}}
                if body.get("stream"):
                    stream = standin._sse(message)
                    if trouble == "cut":
                        return self._reply(200, "text/event-stream", stream, cut=True)
                    self._reply(200, "text/event-stream", stream)
                else:
                    self._reply(200, "application/json", json.dumps(message, indent=None).encode())

            def _reply(self, status: int, content_type: str, payload: bytes, *, retry_after: str | None = None,
                       cut: bool = False) -> None:
                self.send_response(status)
                if retry_after is not None:
                    self.send_header("retry-after", retry_after)
                self.send_header("content-type", content_type)
                self.send_header("request-id", f"req_standin_{standin.count:04d}")
                self.send_header("anthropic-organization-id", ORG_ID)
                self.send_header("set-cookie", "__cf_bm=standin-cookie; path=/")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload[:len(payload) // 2] if cut else payload)
                if cut:
                    self.wfile.flush()
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _pieces(self, value: str) -> list[str]:
        pieces, start = [], 0
        while start < len(value):
            size = self.random.randint(1, 9)
            pieces.append(value[start:start + size])
            start += size
        return pieces or [""]

    def _sse(self, message: dict[str, Any]) -> bytes:
        def event(name: str, data: dict[str, Any]) -> str:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n"

        out = [event("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None, "usage": {"input_tokens": 120, "output_tokens": 1}}}),
            event("ping", {"type": "ping"})]
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                start, kind, key, value = {"type": "text", "text": ""}, "text_delta", "text", block["text"]
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                kind, key, value = "input_json_delta", "partial_json", json.dumps(block["input"])
            out.append(event("content_block_start", {"type": "content_block_start", "index": index,
                                                     "content_block": start}))
            for piece in self._pieces(value):
                out.append(event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                         "delta": {"type": kind, key: piece}}))
            out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
        out.append(event("message_delta", {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
                                                                             "stop_sequence": None},
                                           "usage": {"output_tokens": 40}}))
        out.append(event("message_stop", {"type": "message_stop"}))
        return "".join(out).encode()
