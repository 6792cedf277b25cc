"""Test-side reading of SSE bodies, written apart from the gateway's own code."""

from __future__ import annotations

import json


def events(body: str) -> list[tuple[str, dict]]:
    out = []
    for chunk in body.split("\n\n"):
        if not chunk.strip():
            continue
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def joined(body: str) -> list[tuple[str, dict]]:
    """The events with consecutive deltas of one content block merged into one."""
    out: list[tuple[str, dict]] = []
    for name, data in events(body):
        previous = out[-1][1] if out else None
        if (name == "content_block_delta" and previous and previous.get("type") == "content_block_delta"
                and previous["index"] == data["index"]):
            for key in ("text", "partial_json"):
                if key in data["delta"]:
                    previous["delta"][key] += data["delta"][key]
            continue
        out.append((name, data))
    return out
