"""Linear cassettes: each request body stored as what it adds to an earlier one.

An agent resends its whole history with every request (a Claude Code request is ~42 KB of system
prompt and tools before any of it), so storing full bodies makes a cassette grow with the square of
its turns.  Here a Messages API body is stored, when that is smaller, as

    {"$controlplane": "delta-v1", "base": 3, "set": {...changed keys...}, "keep": 12,
     "messages": [...the new ones...], "cache_control": [[14, 0, {"type": "ephemeral"}]]}

— every other key as in the base request (`drop` lists keys it no longer has, `order` the key order
when it changed), the first `keep` messages of the base (compared without
their cache_control marks, which the CLI moves to the newest block on every request), the new
messages, and where the marks sit now.  The YAML stays vcrpy-loadable (a body is a JSON string);
`decode` rebuilds every body before anything matches it, and a delta that would not rebuild the
exact JSON value is never written.
"""

from __future__ import annotations

import json
from typing import Any

DELTA_KEY = "$controlplane"
DELTA_FORMAT = "delta-v1"


def encode(bodies: list[bytes]) -> list[bytes]:
    """The bodies to store: deltas against the previous JSON body where that is smaller and exact."""
    stored: list[bytes] = []
    base: tuple[dict[str, Any], int] | None = None
    for index, body in enumerate(bodies):
        parsed = _messages_body(body)
        if parsed is None:
            stored.append(body)
            continue
        if base is not None:
            delta = _delta(base[0], parsed, base[1])
            if _apply(delta, base[0]) == parsed:
                encoded = json.dumps(delta, ensure_ascii=False, separators=(",", ":")).encode()
                if len(encoded) < len(body):
                    stored.append(encoded)
                    base = (parsed, index)
                    continue
        stored.append(body)
        base = (parsed, index)
    return stored


def decode(bodies: list[bytes]) -> list[bytes]:
    """Full bodies again (deltas resolved against the bodies they name; everything else as stored)."""
    full: list[bytes] = []
    parsed: dict[int, dict[str, Any]] = {}
    for index, body in enumerate(bodies):
        delta = _delta_body(body)
        if delta is None:
            full.append(body)
            whole = _messages_body(body)
            if whole is not None:
                parsed[index] = whole
            continue
        base = parsed.get(int(delta.get("base", -1)))
        if base is None:
            raise ValueError(f"interaction {index} is stored as a delta of interaction {delta.get('base')}, which "
                             "is not a Messages API body")
        rebuilt = _apply(delta, base)
        parsed[index] = rebuilt
        full.append(json.dumps(rebuilt, ensure_ascii=False, separators=(",", ":")).encode())
    return full


def _messages_body(body: bytes) -> dict[str, Any] | None:
    if not body or body[:1] != b"{":
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if isinstance(value, dict) and isinstance(value.get("messages"), list) and DELTA_KEY not in value:
        return value
    return None


def _delta_body(body: bytes) -> dict[str, Any] | None:
    if not body or not body.startswith(b'{"' + DELTA_KEY.encode()):
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get(DELTA_KEY) == DELTA_FORMAT else None


def _delta(base: dict[str, Any], new: dict[str, Any], base_index: int) -> dict[str, Any]:
    old_messages, _ = _strip(base["messages"])
    new_messages, marks = _strip(new["messages"])
    keep = 0
    for old, current in zip(old_messages, new_messages, strict=False):
        if old != current:
            break
        keep += 1
    delta: dict[str, Any] = {DELTA_KEY: DELTA_FORMAT, "base": base_index,
                             "set": {k: v for k, v in new.items() if k != "messages" and (k not in base or base[k] != v)},
                             "keep": keep, "messages": new_messages[keep:]}
    if marks:
        delta["cache_control"] = marks
    dropped = [k for k in base if k not in new]
    if dropped:
        delta["drop"] = dropped
    if [k for k in new if k in base] != [k for k in base if k in new]:
        delta["order"] = list(new)
    return delta


def _apply(delta: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    old_messages, _ = _strip(base["messages"])
    messages = old_messages[:int(delta["keep"])] + list(delta["messages"])
    for message_index, block_index, mark in delta.get("cache_control", []):
        # Copy only what gets a mark: the rest is shared with the base, never changed.
        target = dict(messages[message_index])
        if block_index is None:
            target["cache_control"] = mark
        else:
            content = list(target["content"])
            content[block_index] = {**content[block_index], "cache_control": mark}
            target["content"] = content
        messages[message_index] = target
    dropped = set(delta.get("drop", ()))
    values = {k: v for k, v in base.items() if k not in dropped}
    values.update(delta["set"])
    values["messages"] = messages
    order = delta.get("order") or [k for k in base if k not in dropped] + [k for k in delta["set"] if k not in base]
    return {k: values[k] for k in order if k in values}


def _strip(messages: list[Any]) -> tuple[list[Any], list[list[Any]]]:
    """The messages without cache_control marks, and where the marks were ([message, block or None, mark])."""
    stripped, marks = [], []
    for m_index, message in enumerate(messages):
        if not isinstance(message, dict):
            stripped.append(message)
            continue
        copy = {k: v for k, v in message.items() if k != "cache_control"}
        if "cache_control" in message:
            marks.append([m_index, None, message["cache_control"]])
        content = message.get("content")
        if isinstance(content, list):
            blocks = []
            for b_index, block in enumerate(content):
                if isinstance(block, dict) and "cache_control" in block:
                    marks.append([m_index, b_index, block["cache_control"]])
                    block = {k: v for k, v in block.items() if k != "cache_control"}
                blocks.append(block)
            copy["content"] = blocks
        stripped.append(copy)
    return stripped, marks
