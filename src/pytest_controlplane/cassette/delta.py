"""Linear cassettes: each request body stored as what it adds to an earlier one.

An agent resends its whole history with every request (a Claude Code request is ~42 KB of system
prompt and tools before any of it), so storing full bodies makes a cassette grow with the square of
its turns.  Here a Messages API body is stored, when that is smaller, as

    {"$controlplane": "delta-v1", "base": 3, "set": {...changed keys...}, "keep": 12,
     "messages": [...the new ones...], "cache_control": [[14, 0, {"type": "ephemeral"}]]}

— every other key as in the base request (`drop` lists keys it no longer has, `order` the key order
when it changed), the first `keep` messages of the base (compared without their cache_control marks,
which the CLI moves to the newest block on every request), the new messages, and where the marks sit
now ([message, block or null, mark], and the mark's place among the block's keys when it is not last).
The base is the latest earlier request with the same model, system prompt and tools (so a side
request with another prompt does not break the chain), else the one before.  The YAML stays
vcrpy-loadable (a body is a JSON string); a delta that would not rebuild the exact JSON value, or is not
smaller, is never written.  `decode` gives each delta back as a `JsonBody` sharing its base's parts.
"""

from __future__ import annotations

import json
from typing import Any

from .body import JsonBody, dumps

DELTA_KEY = "$controlplane"
DELTA_FORMAT = "delta-v1"
_DELTA_START = b'{"' + DELTA_KEY.encode()


def encode(bodies: list[bytes | JsonBody]) -> list[bytes]:
    """The bodies to store: deltas of earlier JSON bodies where that is smaller and rebuilds the same value."""
    stored: list[bytes] = []
    latest: dict[tuple[bytes | None, ...], tuple[JsonBody, int]] = {}
    previous: tuple[JsonBody, int] | None = None
    for index, source in enumerate(bodies):
        raw = source if isinstance(source, bytes) else None
        body = (
            source
            if isinstance(source, JsonBody)
            else (None if source.startswith(_DELTA_START) else JsonBody.parse(source))
        )
        if body is None:
            stored.append(source)  # type: ignore[arg-type]
            continue
        full = raw if raw is not None else body.to_bytes()
        signature = (body.encoded.get("model"), body.encoded.get("system"), body.encoded.get("tools"))
        base = latest.get(signature) or previous
        written = full
        if base is not None:
            delta = _delta(base[0], body, base[1])
            encoded = dumps(delta)
            if len(encoded) < len(full) and _rebuild(delta, base[0]).value() == body.value():
                written = encoded
        stored.append(written)
        latest[signature] = previous = (body, index)
    return stored


def decode(stored: list[bytes]) -> list[bytes | JsonBody]:
    """Each body as stored, deltas rebuilt (as `JsonBody`, sharing their base's parts)."""
    bodies: list[bytes | JsonBody] = []
    parsed: dict[int, JsonBody | None] = {}  # full bodies that deltas are based on
    for index, raw in enumerate(stored):
        delta = _delta_body(raw)
        if delta is None:
            bodies.append(raw)
            continue
        base_index = delta.get("base")
        base = bodies[base_index] if isinstance(base_index, int) and 0 <= base_index < index else None
        if isinstance(base, bytes):
            if base_index not in parsed:
                parsed[base_index] = JsonBody.parse(base)  # type: ignore[index]
            base = parsed[base_index]  # type: ignore[index]
        if not isinstance(base, JsonBody):
            raise ValueError(
                f"interaction {index} is stored as a delta of interaction {base_index}, which is not "
                "an earlier Messages API body"
            )
        try:
            bodies.append(_rebuild(delta, base))
        except (KeyError, TypeError, IndexError, ValueError, AttributeError) as error:
            raise ValueError(f"interaction {index} is a malformed delta ({type(error).__name__}: {error})") from error
    return bodies


def _delta_body(body: bytes) -> dict[str, Any] | None:
    if not body or not body.startswith(_DELTA_START):
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get(DELTA_KEY) == DELTA_FORMAT else None


def _delta(base: JsonBody, new: JsonBody, base_index: int) -> dict[str, Any]:
    keep = 0
    for old, current in zip(base.encoded_messages, new.encoded_messages, strict=False):
        if old != current:
            break
        keep += 1
    delta: dict[str, Any] = {
        DELTA_KEY: DELTA_FORMAT,
        "base": base_index,
        "set": {k: v for k, v in new.fields.items() if base.encoded.get(k) != new.encoded[k]},
        "keep": keep,
        "messages": new.messages[keep:],
    }
    if new.marks:
        delta["cache_control"] = new.marks
    dropped = [k for k in base.order if k not in new.order]
    if dropped:
        delta["drop"] = dropped
    if [k for k in new.order if k in base.order] != [k for k in base.order if k in new.order]:
        delta["order"] = new.order
    return delta


def _rebuild(delta: dict[str, Any], base: JsonBody) -> JsonBody:
    dropped = list(delta.get("drop", ()))
    set_fields = dict(delta["set"])
    keep = int(delta["keep"])
    messages = delta["messages"]
    if not 0 <= keep <= len(base.messages) or not isinstance(messages, list):
        raise ValueError(f"keep={keep} of a base with {len(base.messages)} messages")
    order = list(
        delta.get("order")
        or ([k for k in base.order if k not in dropped] + [k for k in set_fields if k not in base.order])
    )
    if sorted(order) != sorted({*base.fields, *set_fields, "messages"} - set(dropped)):
        raise ValueError(f"key order {order} does not name the body's keys")
    marks = [list(mark) for mark in delta.get("cache_control", [])]
    count = keep + len(messages)
    for message_index, block_index, *_ in marks:
        if (
            not 0 <= message_index < count
            or block_index is not None
            and not (0 <= block_index < len((base.messages[:keep] + messages)[message_index]["content"]))
        ):
            raise IndexError(f"a cache mark on message {message_index}, block {block_index}")
    return base.derive(order=order, set_fields=set_fields, drop=dropped, keep=keep, messages=messages, marks=marks)
