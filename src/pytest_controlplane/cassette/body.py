"""A Messages API request body held as its parts, so that a conversation costs what it adds.

Every request of an agent resends the whole history.  A `JsonBody` keeps each key but ``messages``
and each message (without its cache marks, which move every turn) encoded once, and a body rebuilt
from an earlier one (`derive`, what a stored delta says) shares the earlier one's parts.  Its match
key — the hash of the cut body, see `cassette.keys` — is computed the same way: the hash state after
each message is kept, so a derived body hashes only its new messages and the keys after
``messages``.  Loading a cassette of N turns is therefore linear, not quadratic.

A body stored whole is taken apart keeping the bytes it was sent with; what a delta adds is encoded
as the Anthropic SDK and the Claude Code CLI send JSON (compact, UTF-8), so a rebuilt body has the
key of the request it was recorded from.  Another client's spacing still rebuilds the same JSON
value, and is matched through the normalised index instead.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from .keys import cut

MESSAGES = "messages"


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def strip(messages: list[Any]) -> tuple[list[Any], list[list[Any]]]:
    """The messages without cache_control marks, and where the marks were: [message, block or None, mark], and
    the mark's place among the keys when it is not the last one."""
    stripped, marks = [], []
    for m_index, message in enumerate(messages):
        if not isinstance(message, dict):
            stripped.append(message)
            continue
        if "cache_control" in message:
            marks.append(_mark(m_index, None, message))
            message = {k: v for k, v in message.items() if k != "cache_control"}
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and "cache_control" in b for b in content):
            blocks = []
            for b_index, block in enumerate(content):
                if isinstance(block, dict) and "cache_control" in block:
                    marks.append(_mark(m_index, b_index, block))
                    block = {k: v for k, v in block.items() if k != "cache_control"}
                blocks.append(block)
            message = {**message, "content": blocks}
        stripped.append(message)
    return stripped, marks


def _mark(m_index: int, b_index: int | None, marked: dict[str, Any]) -> list[Any]:
    place = list(marked).index("cache_control")
    return [m_index, b_index, marked["cache_control"]] + ([place] if place != len(marked) - 1 else [])


def _with_mark(value: dict[str, Any], mark: Any, place: int | None) -> dict[str, Any]:
    items = [(k, v) for k, v in value.items() if k != "cache_control"]
    items.insert(len(items) if place is None else place, ("cache_control", mark))
    return dict(items)


class JsonBody:
    """One Messages API body: its key order, other fields, messages without marks, and the marks."""

    __slots__ = (
        "order",
        "fields",
        "encoded",
        "messages",
        "encoded_messages",
        "marks",
        "_base",
        "_cut",
        "_states",
        "_digest",
    )

    def __init__(
        self,
        order: list[str],
        fields: dict[str, Any],
        messages: list[Any],
        marks: list[list[Any]],
        *,
        encoded: dict[str, bytes] | None = None,
        encoded_messages: list[bytes] | None = None,
    ) -> None:
        self.order = order
        self.fields = fields
        self.encoded = encoded if encoded is not None else {k: _field(k, v) for k, v in fields.items()}
        self.messages = messages
        self.encoded_messages = encoded_messages if encoded_messages is not None else [dumps(m) for m in messages]
        self.marks = marks
        self._base: tuple[JsonBody, int] | None = None  # derived from: the body and how many of its messages
        self._cut: dict[bytes, bytes] = {}  # encoded field -> cut, shared along a chain of derived bodies
        self._states: list[Any] | None = None  # hash state after the head and after each message
        self._digest: bytes | None = None

    @classmethod
    def parse(cls, raw: bytes) -> JsonBody | None:
        """The body's parts, or None if it is not a Messages API JSON body.  The parts keep the bytes they had in
        `raw` (sliced while parsing, not encoded again), so the body is keyed exactly as it was sent."""
        if not raw or raw[:1] != b"{":
            return None
        try:
            text = raw.decode("utf-8")
            members = _members(text)
        except (ValueError, StopIteration, IndexError):
            return None
        if members is None:  # valid JSON this walk does not take apart (a repeated key, say)
            try:
                value = json.loads(text)
            except ValueError:
                return None
            return cls.from_value(value) if isinstance(value, dict) and isinstance(value.get(MESSAGES), list) else None
        order = [key for key, _, _ in members]
        fields = {key: value for key, value, _ in members if key != MESSAGES}
        encoded = {key: piece.encode() for key, value, piece in members if key != MESSAGES}
        listed = next(value for key, value, _ in members if key == MESSAGES)
        messages, marks = strip([value for value, _ in listed])
        marked = {mark[0] for mark in marks}
        encoded_messages = [
            dumps(messages[n]) if n in marked else piece.encode() for n, (_, piece) in enumerate(listed)
        ]
        return cls(order, fields, messages, marks, encoded=encoded, encoded_messages=encoded_messages)

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> JsonBody:
        messages, marks = strip(value[MESSAGES])
        return cls(list(value), {k: v for k, v in value.items() if k != MESSAGES}, messages, marks)

    def derive(
        self,
        *,
        order: list[str],
        set_fields: dict[str, Any],
        drop: list[str],
        keep: int,
        messages: list[Any],
        marks: list[list[Any]],
    ) -> JsonBody:
        """A body made of this one's first `keep` messages and fields, changed as told (what a delta stores)."""
        fields = {k: v for k, v in self.fields.items() if k not in drop}
        fields.update(set_fields)
        encoded = {k: v for k, v in self.encoded.items() if k not in drop}
        encoded.update((k, _field(k, v)) for k, v in set_fields.items())
        body = JsonBody(
            order,
            fields,
            self.messages[:keep] + messages,
            marks,
            encoded=encoded,
            encoded_messages=self.encoded_messages[:keep] + [dumps(m) for m in messages],
        )
        body._base, body._cut = (self, keep), self._cut
        return body

    # --- the whole body ------------------------------------------------------------------------

    def value(self) -> dict[str, Any]:
        """The JSON value as sent, cache marks in place."""
        values = {**self.fields, MESSAGES: self._marked_messages()}
        return {k: values[k] for k in self.order}

    def to_bytes(self) -> bytes:
        """The body as a compact-JSON client sends it (joined from the encoded parts, not encoded again)."""
        encoded = list(self.encoded_messages)
        marked = self._marked_messages()
        for message_index in {mark[0] for mark in self.marks}:
            encoded[message_index] = dumps(marked[message_index])
        parts = [b'"messages":[' + b",".join(encoded) + b"]" if k == MESSAGES else self.encoded[k] for k in self.order]
        return b"{" + b",".join(parts) + b"}"

    def digest(self) -> bytes:
        """sha256 of `cut(self.to_bytes())`, computed from the parts: only messages not hashed before cost."""
        if self._digest is None:
            final = self._key_states()[-1].copy()
            position = self.order.index(MESSAGES)
            tail = [part for part in map(self._cut_field, self.order[position + 1 :]) if part]
            final.update(b"]" + b"".join(b"," + part for part in tail) + b"}")
            self._digest = final.digest()
        return self._digest

    # --- helpers -------------------------------------------------------------------------------

    def _marked_messages(self) -> list[Any]:
        messages = list(self.messages)
        for message_index, block_index, mark, *place in self.marks:
            # Copy only what gets a mark: the rest is shared with the bodies this one came from.
            target = messages[message_index]
            if block_index is None:
                target = _with_mark(target, mark, place[0] if place else None)
            else:
                content = list(target["content"])
                content[block_index] = _with_mark(content[block_index], mark, place[0] if place else None)
                target = {**target, "content": content}
            messages[message_index] = target
        return messages

    def _key_states(self) -> list[Any]:
        """The hash states after the head and after each message, taken over from the bodies this one was
        derived from as far as they are shared (walked without recursion: a chain can be thousands long)."""
        chain = [self]
        while chain[-1]._states is None and chain[-1]._base is not None:
            chain.append(chain[-1]._base[0])
        for body in reversed(chain):
            if body._states is not None:
                continue
            base = body._base
            if base is not None and base[0]._states is not None and base[0]._head_parts() == body._head_parts():
                states = base[0]._states[: base[1] + 1]
            else:
                state = hashlib.sha256()
                head = [part for part in map(body._cut_field, body.order[: body.order.index(MESSAGES)]) if part]
                state.update(b"{" + b",".join(head) + (b"," if head else b"") + b'"messages":[')
                states = [state]
            for number in range(len(states) - 1, len(body.messages)):
                state = states[-1].copy()
                piece = cut(body.encoded_messages[number])
                state.update(b"," + piece if number else piece)
                states.append(state)
            body._states = states
        return self._states  # type: ignore[return-value]

    def _head_parts(self) -> list[bytes]:
        return [self.encoded[k] for k in self.order[: self.order.index(MESSAGES)]]

    def _cut_field(self, key: str) -> bytes:
        """A field's encoding, cut (a field cut to nothing, the metadata, goes with its comma)."""
        encoded = self.encoded[key]
        if encoded not in self._cut:
            self._cut[encoded] = cut(encoded)
        return self._cut[encoded]


def _field(key: str, value: Any) -> bytes:
    return dumps(key) + b":" + dumps(value)


_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # json's own scanner, set in __init__, not in stubs
_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, position: int) -> int:
    """The position of the first character at or after `position` that is not JSON whitespace."""
    match = _SPACE.match(text, position)
    assert match is not None  # `[ \t\n\r]*` matches anywhere, if only the empty string
    return match.end()


def _members(text: str) -> list[tuple[str, Any, Any]] | None:
    """A JSON object's members as (key, value, its text `"key":value`), with `messages` as a list of (value,
    its text) per message; None if it has no `messages` list or a key twice.  Raises on invalid JSON."""
    members: list[tuple[str, Any, Any]] = []
    position = _skip_space(text, 1)
    while text[position] != "}" or members:
        start = position
        if text[position] != '"':
            raise ValueError("a key was expected")
        key, position = json.decoder.scanstring(text, position + 1)  # type: ignore[attr-defined]  # not in stubs
        position = _skip_space(text, position)
        if text[position] != ":":
            raise ValueError("':' was expected")
        position = _skip_space(text, position + 1)
        if key == MESSAGES and text[position] == "[":
            listed: list[tuple[Any, str]] = []
            position = _skip_space(text, position + 1)
            while text[position] != "]" or listed:
                value, end = _scan(text, position)
                listed.append((value, text[position:end]))
                position = _skip_space(text, end)
                if text[position] == "]":
                    break
                if text[position] != ",":
                    raise ValueError("',' or ']' was expected")
                position = _skip_space(text, position + 1)
            members.append((key, listed, None))
            position += 1
        else:
            value, position = _scan(text, position)
            members.append((key, value, text[start:position]))
        position = _skip_space(text, position)
        if text[position] == "}":
            break
        if text[position] != ",":
            raise ValueError("',' or '}' was expected")
        position = _skip_space(text, position + 1)
    if text[position + 1 :].strip(" \t\n\r"):
        raise ValueError("text after the JSON object")
    keys = [key for key, _, _ in members]
    return members if MESSAGES in keys and len(set(keys)) == len(keys) else None
