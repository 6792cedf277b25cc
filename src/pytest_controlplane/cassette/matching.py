"""How a request is matched to its recording: what varies between two identical runs (metadata ids, dates,
OS version, ``cache_control`` placement) is removed, and the rest hashed (`match_key`); `keys` finds the same
match without parsing JSON.

A replay on another Claude Code CLI release than the recording's (when the user chose that CLI) matches on a looser
key, `across_key`: the conversation alone (`conversation`), without what each release writes of its own.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any

# Text that differs between two runs of the same agent: (literal start, pattern, what replaces the match: a text,
# or the number of the group that stays).  Every pattern matches at most a few hundred bytes (see cassette.keys).
VARYING_SOURCES: tuple[tuple[str, str, str | int], ...] = (
    ("Today's date is ", r"Today's date is \d{4}-\d{2}-\d{2}", "Today's date is {{date}}"),
    ("OS Version: ", r'OS Version: [^\n\\"]{0,200}', "OS Version: {{os}}"),
    ("cc_version=", r"(cc_version=[0-9.]{1,40})\.[0-9a-f]{1,40}", 1),
)
_VARYING_TEXT = [
    (re.compile(pattern), replacement if isinstance(replacement, str) else rf"\{replacement}")
    for _, pattern, replacement in VARYING_SOURCES
]
_DROPPED_KEYS = frozenset({"metadata", "cache_control"})


def _normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items() if k not in _DROPPED_KEYS}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, str):
        return _normalise_text(value)
    return value


@functools.lru_cache(maxsize=65536)
def _normalise_text(value: str) -> str:
    # Every request resends the same system prompt, tool descriptions and history: each string once.
    for pattern, replacement in _VARYING_TEXT:
        value = pattern.sub(replacement, value)
    return value


def normalised_body(body: bytes) -> Any:
    """The request body with everything that varies between identical runs removed."""
    text = body.decode("utf-8", "replace") if body else "null"
    if not text.startswith('{"') or '"messages"' not in text:
        try:
            return _normalise(json.loads(text))
        except ValueError:
            return text
    # A Messages API body: the varying text is replaced in the raw JSON (one pass, not one per string), and
    # the marks are dropped where the API puts them — a walk of the top two levels, not of every node.
    for pattern, replacement in _VARYING_TEXT:
        text = pattern.sub(replacement, text)
    try:
        data = json.loads(text)
    except ValueError:
        return text
    data.pop("metadata", None)
    for key in ("system", "tools", "messages"):
        if isinstance(data.get(key), list):
            data[key] = [_unmarked(item) for item in data[key]]
    return data


def _unmarked(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    item = {k: v for k, v in item.items() if k != "cache_control"}
    if isinstance(item.get("content"), list):
        item["content"] = [_unmarked(block) for block in item["content"]]
    return item


def match_key(method: str, route: str, body: bytes) -> str:
    """The key a request is matched by: method, path (no query) and the normalised body."""
    canonical = json.dumps(normalised_body(body), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(f"{method.upper()} {route}\n{canonical}".encode()).hexdigest()


def pretty(body: bytes) -> str:
    """A normalised body pretty-printed for a diff."""
    return json.dumps(normalised_body(body), indent=1, sort_keys=True, ensure_ascii=False)


# What a CLI release writes into a request of its own, measured on the examples recorded on CLI 2.1.300, 2.1.332 and
# 2.1.337 from the same scripted model: the system prompt, the tool definitions (23 on 2.1.300, 13 after), the
# `role: system` messages it puts among the turns (its environment block; "tokens left" on 2.1.300 only) and the
# <system-reminder> text it adds to a turn.  The rest (model, limits, thinking settings) was equal but is the CLI's
# choice too.  What is left was equal on all three: the user's prompts, the model's text and tool calls (whose ids
# come from the recorded answers), the tool results, in order.  Thinking blocks go too: they come from the recorded
# answers, and a release may keep or clear them in the history it resends.
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.S)
_CLI_OWN_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def conversation(body: bytes) -> Any:
    """The request as the conversation it carries: each turn's blocks in order, as [role, block] (the CLI may split or
    join its messages), without what a CLI release adds of its own (see above); whether it streams and whether it
    offers tools (the CLI's side requests offer none) tell a main-loop turn from a side request."""
    data = normalised_body(body)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return data
    turns = []
    for message in data["messages"]:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else [content]:
            kept = _conversed(block)
            if kept is not None:
                turns.append([message["role"], kept])
    return {"stream": data.get("stream") is True, "tools": bool(data.get("tools")), "conversation": turns}


def _conversed(block: Any) -> Any:
    """A block without the CLI's reminders in its text (None: nothing of the conversation is left)."""
    if isinstance(block, str):
        block = {"type": "text", "text": block}
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind in _CLI_OWN_BLOCKS:
        return None
    # cache marks wherever a release puts them (inside a tool result too); `is_error: false` said or left out
    block = {k: v for k, v in block.items() if k != "cache_control" and not (k == "is_error" and v is False)}
    if kind == "text" and isinstance(block.get("text"), str):
        text = _REMINDER.sub("", block["text"])
        return {**block, "text": text} if text.strip() else None
    if kind == "tool_result":
        content = block.get("content")
        items = [content] if isinstance(content, str) else content if isinstance(content, list) else None
        if items is not None:
            block["content"] = [kept for item in items if (kept := _conversed(item)) is not None]
    return block


def across_key(method: str, route: str, body: bytes) -> str:
    """The key a request is matched by across CLI releases: method, path and its `conversation`."""
    canonical = json.dumps(conversation(body), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(f"{method.upper()} {route}\n{canonical}".encode()).hexdigest()
