"""What crosses the HTTP boundary: requests the agent sends, responses it gets, SSE framing.

A response is kept in vcrpy's own shape (``{"status": {...}, "headers": {name: [values]},
"body": {"string": bytes}}``) so that a cassette stores exactly what the gateway served.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from . import answers
from .codings import header

# Who chose the Claude Code CLI that sent a request (clis.choice.Cli.chosen_by), when somebody did: the agent adds it
# through the CLI's ANTHROPIC_CUSTOM_HEADERS, and a replay on another release than the recording's reads it
# (gateway/releases.py).  Never stored, never forwarded.
CHOSEN_BY_HEADER = "x-controlplane-cli-chosen-by"
# Headers that describe one hop of one connection; never stored, never replayed.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade", "date"}
)


@dataclass
class ModelRequest:
    """One request as the agent sent it to the gateway."""

    method: str
    path: str  # with its query string, e.g. "/v1/messages?beta=true"
    headers: dict[str, str]
    body: bytes
    index: int = 0  # position among the requests this gateway received

    @property
    def route(self) -> str:
        return urlsplit(self.path).path

    @cached_property
    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None

    @property
    def stream(self) -> bool:
        return isinstance(self.json, dict) and bool(self.json.get("stream"))

    def header(self, name: str, default: str = "") -> str:
        name = name.lower()
        for key, value in self.headers.items():
            if key.lower() == name:
                return value
        return default

    @property
    def claude_cli_version(self) -> str | None:
        """The Claude Code CLI version, read off its User-Agent (`claude-cli/2.1.332 (...)`)."""
        agent = self.header("user-agent")
        if agent.startswith("claude-cli/"):
            return agent.split("/", 1)[1].split(" ", 1)[0]
        return None

    @property
    def agent_sdk_version(self) -> str | None:
        """The Claude Agent SDK version that drove the CLI, read off its User-Agent (`(…, agent-sdk/0.2.189)`)."""
        found = re.search(r"\bagent-sdk/([\w.+-]+)", self.header("user-agent"))
        return found.group(1) if found else None

    # Convenience for scripted turns written as functions of the request.
    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.json.get("messages", [])) if isinstance(self.json, dict) else []

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks of the last user message (what the tools just returned)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, list):
                    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
                return []
        return []

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
            if texts:
                return texts[-1]
        return ""


ANSWER_WAIT = 10.0  # seconds a reader of an exchange waits for the server thread still sending its answer


@dataclass
class Exchange:
    """A request and what the gateway answered, with where the answer came from."""

    request: ModelRequest
    response: dict[str, Any]
    source: str  # "cassette", "upstream", "script", "gateway" (an error it made itself)
    interaction: int | None = None  # index in the cassette, when replayed or recorded
    notes: list[str] = field(default_factory=list)
    # Set by the server thread once the last byte is out (or the client went away); readers of what is written
    # after answering wait for it rather than for luck.
    served: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)
    _seconds: float = field(default=0.0, repr=False)

    @property
    def seconds(self) -> float:
        """The gateway's own time: from the request line in to the last byte of the answer out.  Waits (up to
        10 s) for a server thread still sending it."""
        if not self.served.wait(ANSWER_WAIT):
            raise TimeoutError(
                f"The gateway was still sending its answer to {self.request.method} {self.request.path} "
                f"{ANSWER_WAIT:g} s later, so it has no time for it yet: the client stopped reading."
            )
        return self._seconds

    def finish(self, seconds: float) -> None:
        self._seconds = seconds
        self.served.set()

    @property
    def status(self) -> int:
        return int(self.response["status"]["code"])

    @property
    def body(self) -> bytes:
        return self.response["body"]["string"] or b""

    @cached_property
    def answer(self) -> dict[str, Any] | None:
        """The Messages API object the model answered (a stream's deltas joined); None for an error status or a
        body that is no such object."""
        return assemble_message(self.response) if self.status == 200 else None


def make_response(status: int, body: bytes, content_type: str, reason: str = "", **headers: str) -> dict[str, Any]:
    all_headers = {"content-type": [content_type]}
    all_headers.update({k.replace("_", "-"): [v] for k, v in headers.items()})
    return {
        "status": {"code": status, "message": reason or _REASONS.get(status, "")},
        "headers": all_headers,
        "body": {"string": body},
    }


def json_response(status: int, payload: Any, **headers: str) -> dict[str, Any]:
    return make_response(status, json.dumps(payload).encode(), "application/json", **headers)


def api_error(status: int, kind: str, message: str) -> dict[str, Any]:
    """An error in the Anthropic API's own shape, so every client reports it readably."""
    return json_response(status, {"type": "error", "error": {"type": kind, "message": message}})


_REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 502: "Bad Gateway"}


def header_value(response: dict[str, Any], name: str) -> str:
    return header(response.get("headers") or {}, name.lower())


# --- Server-sent events -------------------------------------------------------------------------


@dataclass
class SseEvent:
    event: str | None
    data: str

    def encode(self) -> bytes:
        head = f"event: {self.event}\n" if self.event is not None else ""
        return f"{head}data: {self.data}\n\n".encode()

    @property
    def payload(self) -> Any:
        try:
            return json.loads(self.data)
        except ValueError:
            return None


def parse_sse(body: bytes) -> list[SseEvent]:
    """Split an SSE body into events (only the `event` and `data` fields matter to the API)."""
    events = []
    for block in body.decode("utf-8", "replace").replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
        events.append(SseEvent(name, "\n".join(data)))
    return events


def encode_sse(events: list[SseEvent]) -> bytes:
    return b"".join(e.encode() for e in events)


def is_sse(response: dict[str, Any]) -> bool:
    return header_value(response, "content-type").startswith("text/event-stream")


def token_counts(usage: dict[str, Any]) -> tuple[int, int]:
    """(input, output) tokens of an answer's `usage`: input counts the prompt tokens written to and read from the
    cache too, as the API bills them."""
    tokens_in = sum(
        int(usage.get(key) or 0) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return tokens_in, int(usage.get("output_tokens") or 0)


def assemble_message(response: dict[str, Any]) -> dict[str, Any] | None:
    """The final Messages API object a streaming or plain response amounts to (deltas joined); a compressed body
    is read decoded.  None for a body that is not a well-formed Messages API answer (see `answers`)."""
    return answers.read(response).message
