"""The Messages API answer a response amounts to, read strictly: the message (a stream's deltas joined), or what is
wrong with the body, line by line.

One reader serves everything that reads a recorded or upstream answer: replay refuses a cassette it flags before the
agent runs, `controlplane cassettes check` lists what it flags, and reports, budgets and canary scans take its message
(None when flawed).  Whatever the response holds, `read` returns; it never raises.

A stream must be the API's: ``message_start``; each content block started at the next index, extended by deltas of
its own kind, stopped; ``message_delta``; ``message_stop`` last (``ping`` anywhere; an ``error`` event ends it as an
error answer).  Event and delta types it does not know are let through, for the API's next ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from .codings import UndecodableBody, decoded_response, header

CLIP = 80  # characters of a flawed line shown
STREAM = "text/event-stream"
# The delta types the API sends: the field holding their text, and the block types they extend.
DELTAS = {
    "text_delta": ("text", ("text",)),
    "input_json_delta": ("partial_json", ("tool_use", "server_tool_use", "mcp_tool_use")),
    "thinking_delta": ("thinking", ("thinking",)),
    "signature_delta": ("signature", ("thinking",)),
}
USAGE_COUNTS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


@dataclass(frozen=True)
class Flaw:
    """One thing wrong with a body: its `line` (of the decoded body, from 1; 0 for the body as a whole), that line
    clipped (`text`), and `what` is wrong."""

    line: int
    text: str
    what: str


@dataclass
class Reading:
    """What a response amounts to: the Messages API object (None when it is none, or flawed) and the flaws."""

    message: dict[str, Any] | None = None
    flaws: list[Flaw] = field(default_factory=list)


def read(response: dict[str, Any], *, streamed: bool = False) -> Reading:
    """The answer a response (vcrpy's shape) holds, read as the client would: decoded, then an event stream or a JSON
    object by its Content-Type.  `streamed`: the request asked for a stream, so only an event stream answers it."""
    try:
        plain = decoded_response(response)
        body = plain["body"]["string"] or b""
        kind = header(plain.get("headers") or {}, "content-type").split(";")[0].strip().lower()
        body = body.encode("utf-8", "surrogateescape") if isinstance(body, str) else bytes(body)
    except (UndecodableBody, LookupError, TypeError, AttributeError) as error:
        return Reading(flaws=[Flaw(0, "", f"it cannot be decoded: {error}")])
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        number = body.count(b"\n", 0, error.start) + 1
        line = body.split(b"\n")[number - 1].decode("utf-8", "replace")
        return Reading(flaws=[Flaw(number, _clip(line), f"bytes that are not UTF-8 ({error.reason})")])
    lines = text.replace("\r\n", "\n").split("\n")
    first = next((number for number, line in enumerate(lines, 1) if line.strip()), 0)
    if not first:
        return Reading(flaws=[Flaw(0, "", "it is empty")])
    excerpt, opening = _clip(lines[first - 1]), lines[first - 1].lstrip()[:1]
    if kind == STREAM and opening in ("{", "[", "<"):
        what = f"the body is {'HTML' if opening == '<' else 'JSON'}, not the event stream its Content-Type says"
        return Reading(flaws=[Flaw(first, excerpt, what)])
    if kind == STREAM:
        return _Stream(lines).read()
    said = f"the Content-Type is {kind!r}" if kind else "there is no Content-Type"
    if streamed:
        return Reading(flaws=[Flaw(0, excerpt, f"the request asked for a stream ({STREAM}), but {said}")])
    if kind not in ("application/json", ""):
        return Reading(flaws=[Flaw(0, excerpt, f"{said}, not application/json or {STREAM}")])
    joined = "\n".join(lines)
    try:
        message = json.loads(joined)
    except ValueError as error:
        return Reading(flaws=[_json_flaw("the body", joined, error, lines, 1)])
    problems = _message_problems(message)
    return Reading(None if problems else message, [Flaw(0, "", what) for what in problems])


def _is_int(value: object) -> TypeGuard[int]:
    return type(value) is int


class _Stream:
    """An event stream read event by event, the message built as it goes."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.message: dict[str, Any] | None = None
        self.flaws: list[Flaw] = []
        self.open: set[int] = set()
        self.partial: dict[int, str] = {}
        self.strays: set[str] = set()  # blocks that deltas or stops named out of turn
        self.ended = ""  # the event that ended the stream: message_stop or error
        # A line or event that cannot be read hides what it was: the order of the events is not judged after it.
        self.unreadable = False

    def read(self) -> Reading:
        name: str | None = None
        data: list[str] = []
        start = 0
        for number, line in enumerate([*self.lines, ""], 1):
            if line == "":
                if data or name is not None:
                    self._event(start, name, "\n".join(data) if data else None)
                name, data, start = None, [], 0
            elif not line.startswith(":"):  # a comment otherwise
                key, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if key == "event":
                    name, start = value, start or number
                elif key == "data":
                    data.append(value)
                    start = number if len(data) == 1 else start
                elif key not in ("id", "retry"):
                    self._flaw(number, "not a line of an event stream (`event:` or `data:`)")
                    self.unreadable = True
        if not self.ended and not self.unreadable:
            last = next(n for n in range(len(self.lines), 0, -1) if self.lines[n - 1].strip())
            self._flaw(last, "the stream ends without message_stop (cut short?)")
        if self.message is not None and not self.flaws:
            self.flaws += [Flaw(0, "", what) for what in _message_problems(self.message)]
        return Reading(None if self.flaws or self.ended != "message_stop" else self.message, self.flaws)

    def _flaw(self, number: int, what: str) -> None:
        if what:
            self.flaws.append(Flaw(number, _clip(self.lines[number - 1]), what))

    def _event(self, number: int, name: str | None, data: str | None) -> None:
        payload = self._payload(number, name, data)
        self.unreadable = self.unreadable or payload is None
        if payload is None or self.unreadable or payload["type"] == "ping":
            return
        kind = payload["type"]
        if self.ended:
            self._flaw(number, f"{kind} after {self.ended}")
        elif kind == "error":
            self.ended = kind
        elif kind == "message_start":
            self._flaw(number, self._start(payload))
        else:
            if self.message is None:
                self.message = {"content": []}  # read on, so that one missing event is not every event's flaw
                self._flaw(number, f"{kind} before message_start (the stream must begin with message_start)")
            self._flaw(number, self._apply(kind, payload))

    def _payload(self, number: int, name: str | None, data: str | None) -> dict[str, Any] | None:
        """The event's data, an object with a `type` that its `event:` name agrees with; None (flawed) otherwise."""
        if data is None:
            self._flaw(number, f"`event: {name}` has no `data:` line")
            return None
        try:
            payload = json.loads(data)
        except ValueError as error:
            self.flaws.append(_json_flaw("the data", data, error, self.lines, number))
            return None
        kind = payload.get("type") if isinstance(payload, dict) else None
        if not isinstance(kind, str):
            self._flaw(number, "the data is not a JSON object with a `type`")
        elif name is not None and name != kind:
            self._flaw(number, f"`event: {name}` carries data of type {kind!r}")
        else:
            return payload
        return None

    def _start(self, payload: dict[str, Any]) -> str:
        started = payload.get("message")
        if self.message is not None:
            return "a second message_start"
        self.message = {"content": []}
        if not isinstance(started, dict) or not isinstance(started.get("content"), list):
            return "message_start without a `message` holding a `content` list"
        if not isinstance(started.get("usage") or {}, dict):
            return "message_start whose `usage` is not an object"
        self.message = {**started, "content": list(started["content"])}
        return ""

    def _apply(self, kind: str, payload: dict[str, Any]) -> str:
        assert self.message is not None
        blocks, index = self.message["content"], payload.get("index")
        if kind == "content_block_start":
            block = payload.get("content_block")
            if not _is_int(index) or index != len(blocks):
                return f"content_block_start for block {index!r}; the next block is {len(blocks)} (out of order?)"
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                return "content_block_start without a `content_block` that has a `type`"
            blocks.append(dict(block))
            self.open.add(index)
        elif kind in ("content_block_delta", "content_block_stop"):
            if not _is_int(index) or index not in self.open:
                if repr(index) in self.strays:
                    return ""  # said once per block
                self.strays.add(repr(index))
                stopped = _is_int(index) and 0 <= index < len(blocks)
                return f"{kind} for block {index!r}, which " + ("was stopped already" if stopped else "never started")
            if kind == "content_block_stop":
                return self._stop(blocks[index], index)
            return self._delta(blocks[index], index, payload.get("delta"))
        elif kind == "message_delta":
            delta, usage = payload.get("delta") or {}, payload.get("usage") or {}
            if not isinstance(delta, dict) or not isinstance(usage, dict):
                return "message_delta whose `delta` or `usage` is not an object"
            self.message.update((k, v) for k, v in delta.items() if k not in ("content", "usage"))
            self.message["usage"] = {**(self.message.get("usage") or {}), **usage}
        elif kind == "message_stop":
            self.ended = kind
            if self.open:
                return f"message_stop while block(s) {sorted(self.open)} were never stopped (no content_block_stop)"
        return ""

    def _delta(self, block: dict[str, Any], index: int, delta: Any) -> str:
        kind = delta.get("type") if isinstance(delta, dict) else None
        if not isinstance(kind, str):
            return "content_block_delta without a `delta` object that has a `type`"
        if kind not in DELTAS:
            return ""
        key, extends = DELTAS[kind]
        if block["type"] not in extends or not isinstance(delta.get(key), str):
            return f"a {kind} (with a string `{key}`) cannot extend block {index}, of type {block['type']!r}"
        if key == "partial_json":
            self.partial[index] = self.partial.get(index, "") + delta[key]
        else:
            block[key] = str(block.get(key) or "") + delta[key]
        return ""

    def _stop(self, block: dict[str, Any], index: int) -> str:
        self.open.discard(index)
        if index not in self.partial:
            return ""
        try:
            block["input"] = json.loads(self.partial[index]) if self.partial[index] else {}
        except ValueError as error:
            return f"the input_json_delta parts of block {index} join into text that is not JSON ({error})"
        return ""


def _message_problems(message: Any) -> list[str]:
    """What keeps an object from being a Messages API message that reports and oracles can read."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return ["the answer is not a Messages API message (a JSON object with a `content` list)"]
    problems = []
    for number, block in enumerate(message["content"]):
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str):
            problems.append(f"content block {number} is not an object with a `type`")
        elif kind == "text" and not isinstance(block.get("text"), str):
            problems.append(f"content block {number} (text) has no string `text`")
        elif kind == "tool_use" and not (
            isinstance(block.get("id"), str)
            and isinstance(block.get("name"), str)
            and isinstance(block.get("input"), dict)
        ):
            problems.append(f"content block {number} (tool_use) lacks a string `id` or `name`, or an `input` object")
    usage = message.get("usage") or {}
    counts = [usage.get(key) for key in USAGE_COUNTS] if isinstance(usage, dict) else [""]
    if any(value is not None and not _is_int(value) for value in counts):
        problems.append("its `usage` is not an object of token counts")
    return problems


def _json_flaw(subject: str, text: str, error: ValueError, lines: list[str], first: int) -> Flaw:
    """`subject` is not JSON: where the decoder stopped (`text` begins on body line `first`, after any field name),
    that line clipped around the column, and the decoder's words."""
    row = getattr(error, "lineno", 1)
    line = lines[first + row - 2]
    column = len(line) - len(text.split("\n")[row - 1]) + getattr(error, "colno", 1)
    what = f"{subject} is not JSON: {getattr(error, 'msg', error)} (column {column})"
    return Flaw(first + row - 1, _clip(line, column), what)


def _clip(line: str, column: int = 0) -> str:
    """`line` cut to CLIP characters, around `column` when given."""
    line = line.rstrip("\r")
    if len(line) <= CLIP:
        return line
    start = max(0, min(column - CLIP // 2, len(line) - CLIP)) if column else 0
    return ("…" if start else "") + line[start : start + CLIP] + ("…" if start + CLIP < len(line) else "")
