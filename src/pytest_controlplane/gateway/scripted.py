"""A scripted model: answers Messages API requests from a list of turns, in the real wire format.

    model = ScriptedModel([tool_use("Write", {"file_path": ".env", "content": "x"}), text("done")])

A turn is one block, a list of blocks, or a function of the `ModelRequest` returning either.
The whole script may also be one function of the request.  `subagent=[...]` answers the requests of the
subagents the agent starts (the Claude Code CLI marks them with an `x-claude-code-agent-id` header) from
their own turns; `then="Done."` answers every request after the turns are used up.  Streaming requests get server-sent
events whose deltas are split at irregular points, as the real API splits them, so whatever
consumes them must join deltas as it would in production.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cli_facts import CLASSIFIER_ALLOW, classifier_asks
from ..errors import ConfigError, ScriptExhausted, ours
from ..wire import ModelRequest, SseEvent, encode_sse, json_response, make_response

__tracebackhide__ = ours  # our errors show without our frames

DEFAULT_MODEL = "claude-scripted"
SOURCE_HEADER = "x-controlplane-source"
SOURCE = "scripted-model"
# Sent by a recording gateway to a stand-in on this machine (never to a remote API): which test is recording, so
# that `controlplane serve --script` plays each test its own script from the start.
TEST_HEADER = "x-controlplane-test"
# The Claude Code CLI sends it on every request of a subagent (Agent, Workflow), never on the main agent's.
SUBAGENT_HEADER = "x-claude-code-agent-id"


@dataclass(frozen=True)
class Block:
    """One content block of a scripted turn."""

    type: str
    text: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


def text(value: str) -> Block:
    """A text block: the model says `value`."""
    return Block("text", text=value)


def tool_use(name: str, input: dict[str, Any] | None = None, *, id: str | None = None) -> Block:  # noqa: A002
    """A tool_use block: the model calls tool `name` with `input`."""
    return Block("tool_use", name=name, input=dict(input or {}), id=id)


TurnLike = Block | Sequence[Block] | Callable[[ModelRequest], Any]

# The real API splits streamed text at uneven points; a fixed uneven cycle keeps runs identical.
_SPLITS = (3, 11, 5, 17, 2, 7)


def _split(value: str) -> list[str]:
    parts, start = [], 0
    for size in itertools.cycle(_SPLITS):
        if start >= len(value):
            break
        parts.append(value[start : start + size])
        start += size
    return parts or [""]


class ScriptedModel:
    """Answers each model request with the next scripted turn (or from a function of the request)."""

    __test__ = False  # not a test class, whatever pytest's collection rules say

    def __init__(
        self,
        turns: Sequence[TurnLike] | Callable[[ModelRequest], Any],
        *,
        model: str | None = None,
        subagent: Sequence[TurnLike] | None = None,
        then: str | None = None,
    ) -> None:
        if callable(turns) and not isinstance(turns, Block):
            self._function: Callable[[ModelRequest], Any] | None = turns
            self._turns: list[TurnLike] = []
        else:
            if isinstance(turns, Block):
                turns = [turns]
            self._function = None
            self._turns = list(turns)
        self.model = model
        self.served = 0
        self._ids = itertools.count(1)
        self.then = then
        self.subagent = ScriptedModel(subagent, then=then) if subagent is not None else None

    @property
    def remaining(self) -> int:
        """Turns not yet asked for (0 for a script that is a function)."""
        return 0 if self._function else max(0, len(self._turns) - self.served)

    def next_turn(self, request: ModelRequest) -> list[Block]:
        """The blocks of the turn that answers `request` (ScriptExhausted when there is none left)."""
        if self.subagent is not None and is_subagent(request):
            return self.subagent.next_turn(request)
        if self._function is not None:
            turn: Any = self._function
        elif self.served < len(self._turns):
            turn = self._turns[self.served]
        elif self.then is not None:
            turn = text(self.then)
        else:
            raise ScriptExhausted(
                f"The scripted model has {len(self._turns)} turn(s) and all were served; the agent sent "
                f"request #{request.index + 1} asking for another.",
                hint="Add the turn the agent needs (e.g. text('done') to end the conversation).",
            )
        if callable(turn) and not isinstance(turn, Block):
            turn = turn(request)
        self.served += 1
        blocks = [turn] if isinstance(turn, Block) else list(turn)
        for block in blocks:
            if not isinstance(block, Block):
                raise ConfigError(
                    f"A scripted turn must be made of text(...) and tool_use(...) blocks, got {block!r}.",
                    hint="Write each turn as text(...), tool_use(...), a list of them, or a function "
                    "of the request returning them.",
                )
        return blocks

    def respond(self, request: ModelRequest) -> dict[str, Any]:
        """The response to `request` (ScriptExhausted when there is no turn left); the CLI's own safety classifier
        is answered "allow" without using a turn (cli_facts.classifier_asks: it is not the agent's model)."""
        blocks = [text(CLASSIFIER_ALLOW)] if classifier_asks(request.json) else self.next_turn(request)
        body = request.json if isinstance(request.json, dict) else {}
        model = self.model or body.get("model") or DEFAULT_MODEL
        number = next(self._ids)
        content: list[dict[str, Any]] = []
        for position, block in enumerate(blocks):
            if block.type == "text":
                content.append({"type": "text", "text": block.text})
            else:
                content.append(
                    {
                        "type": "tool_use",
                        "id": block.id or f"toolu_scripted_{number:03d}_{position}",
                        "name": block.name,
                        "input": block.input,
                    }
                )
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        usage = {"input_tokens": max(1, len(request.body) // 4), "output_tokens": 1 + len(json.dumps(content)) // 4}
        message = {
            "id": f"msg_scripted_{number:04d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if request.stream:
            return make_response(
                200, encode_sse(_stream_events(message)), "text/event-stream", **{SOURCE_HEADER: SOURCE}
            )
        return json_response(200, message, **{SOURCE_HEADER: SOURCE})


def is_subagent(request: ModelRequest) -> bool:
    """Whether `request` comes from a subagent (the CLI's header, or the `cc_is_subagent=true` its system prompt
    carries) rather than from the main agent."""
    if request.header(SUBAGENT_HEADER):
        return True
    system = (request.json or {}).get("system") if isinstance(request.json, dict) else None
    return isinstance(system, list) and any(
        isinstance(b, dict) and "cc_is_subagent=true" in str(b.get("text", "")) for b in system
    )


def _event(name: str, payload: dict[str, Any]) -> SseEvent:
    return SseEvent(name, json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


def _stream_events(message: dict[str, Any]) -> list[SseEvent]:
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1},
    }
    events = [_event("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        opening: dict[str, Any]
        if block["type"] == "text":
            opening, kind, field_, value = {"type": "text", "text": ""}, "text_delta", "text", block["text"]
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            kind, field_, value = "input_json_delta", "partial_json", json.dumps(block["input"], ensure_ascii=False)
        events.append(
            _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        )
        for part in _split(value):
            events.append(
                _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": {"type": kind, field_: part}},
                )
            )
        events.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        )
    )
    events.append(_event("message_stop", {"type": "message_stop"}))
    return events


class ScriptPerTest(ScriptedModel):
    """A stand-in's model (stand_in.py): its script started afresh for each test that records through it, with
    the test's own message and tool ids, so that a test records the same cassette alone or among others.

    `source`: the turns (a list, a ScriptedModel's turns, a function of the request) every test gets from the
    start, or a dict of them keyed by test id (a node id, or its last part: `test_note`).  The test is the one
    a recording gateway names in its `x-controlplane-test` header; requests without it share one script."""

    def __init__(self, source: Any) -> None:
        super().__init__([])
        self.source = (source._function or source._turns) if isinstance(source, ScriptedModel) else source
        self.models: dict[str, ScriptedModel] = {}
        self._lock = threading.Lock()

    def respond(self, request: ModelRequest) -> dict[str, Any]:
        test = request.header(TEST_HEADER)
        with self._lock:
            if test not in self.models:
                self.models[test] = ScriptedModel(self._turns_of(test))
            model = self.models[test]
        return model.respond(request)

    def _turns_of(self, test: str) -> Any:
        if not isinstance(self.source, Mapping):
            return self.source
        for key in (test, test.rpartition("::")[2], test.rpartition("::")[2].partition("[")[0]):
            if key in self.source:
                return self.source[key]
        raise ScriptExhausted(
            f"The stand-in's script has no turns for test {test or '(no test named)'}; it has: "
            f"{', '.join(map(str, self.source)) or 'nothing'}.",
            hint="Add the test's id (or its name) as a key of the script's dict.",
        )
