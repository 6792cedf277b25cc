"""Make requests and responses independent of the machine and the run.

**Templating** swaps the run's own directories (workspace, HOME, config dir, TMPDIR — raw,
  realpath and the CLI's slug form ``/tmp/x/ws -> -tmp-x-ws``) for placeholders such as
  ``{{workspace}}`` before anything is stored, and expands them back on replay.  The real API
  splits a tool input across ``input_json_delta`` events at arbitrary points, so a streamed
  content block holding a path is coalesced into one delta first.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from ..wire import SseEvent, encode_sse, header_value, is_sse, parse_sse


def slug(path: str) -> str:
    """The Claude Code CLI's directory slug: every non-alphanumeric character becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


class Templater:
    """Replaces named directories by ``{{name}}`` placeholders, and back."""

    def __init__(self, roots: Mapping[str, str | os.PathLike[str]] | None = None) -> None:
        self.roots = {name: os.fspath(path) for name, path in (roots or {}).items()}
        forward: dict[str, str] = {}
        for name, path in self.roots.items():
            for spelling in {path, os.path.realpath(path)}:
                forward[spelling] = "{{%s}}" % name
                forward[slug(spelling)] = "{{%s:slug}}" % name
        # Longest first, so /tmp/x/ws is replaced before /tmp/x.
        self._forward = sorted(forward.items(), key=lambda kv: -len(kv[0]))
        backward = [("{{%s}}" % n, p) for n, p in self.roots.items()]
        backward += [("{{%s:slug}}" % n, slug(p)) for n, p in self.roots.items()]
        # Bodies are templated as bytes (UTF-8 is self-synchronising: the same replacements, no decoding).
        self._forward_bytes = [(os.fsencode(a), os.fsencode(b)) for a, b in self._forward]
        self._backward_bytes = [(os.fsencode(a), os.fsencode(b)) for a, b in backward]

    def __bool__(self) -> bool:
        return bool(self.roots)

    def contains_path(self, text: str) -> bool:
        return any(path in text for path, _ in self._forward)

    # --- bodies --------------------------------------------------------------------------------

    def template_body(self, body: bytes) -> bytes:
        for path, placeholder in self._forward_bytes:
            if path in body:
                body = body.replace(path, placeholder)
        return body

    def expand_body(self, body: bytes) -> bytes:
        if b"{{" not in body:
            return body
        for placeholder, path in self._backward_bytes:
            body = body.replace(placeholder, path)
        return body

    def template_response(self, response: dict[str, Any]) -> dict[str, Any]:
        """A copy of a response with the run's paths templated (SSE blocks coalesced where needed)."""
        body = response["body"]["string"] or b""
        if not self or header_value(response, "content-encoding"):
            return response
        if is_sse(response):
            body = encode_sse(coalesce_blocks_containing(parse_sse(body), self.contains_path))
        return {**response, "body": {"string": self.template_body(body)}}

    def expand_response(self, response: dict[str, Any]) -> dict[str, Any]:
        if header_value(response, "content-encoding"):
            return response
        return {**response, "body": {"string": self.expand_body(response["body"]["string"] or b"")}}


_DELTA_FIELD = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}


def coalesce_blocks_containing(events: list[SseEvent], wanted: Any) -> list[SseEvent]:
    """Merge the deltas of each content block whose joined text satisfies `wanted` into one delta.

    Blocks that do not are left byte for byte as they came, so a response without any path
    in a split delta replays identically.
    """
    joined: dict[int, list[str]] = {}
    kinds: dict[int, str] = {}
    for event in events:
        data = event.payload
        if isinstance(data, dict) and data.get("type") == "content_block_delta":
            delta = data.get("delta", {})
            field = _DELTA_FIELD.get(delta.get("type"))
            if field is None:
                continue
            joined.setdefault(data["index"], []).append(delta[field])
            kinds[data["index"]] = delta["type"]
    merge = {i for i, parts in joined.items() if len(parts) > 1 and wanted("".join(parts))}
    if not merge:
        return events
    out: list[SseEvent] = []
    emitted: set[int] = set()
    for event in events:
        data = event.payload
        if isinstance(data, dict) and data.get("type") == "content_block_delta" and data["index"] in merge:
            index = data["index"]
            if index in emitted:
                continue
            emitted.add(index)
            kind = kinds[index]
            merged = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": kind, _DELTA_FIELD[kind]: "".join(joined[index])},
            }
            out.append(SseEvent(event.event, json.dumps(merged, ensure_ascii=False, separators=(",", ":"))))
        else:
            out.append(event)
    return out
