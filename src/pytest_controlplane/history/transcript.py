"""Reading a Claude Code session transcript (`<config>/projects/<slug>/<session>.jsonl`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import SessionCorrupt, SessionNotFound, ours

__tracebackhide__ = ours  # our errors show without our frames


def read_transcript(path: Path | str) -> list[dict[str, Any]]:
    """The transcript's entries in file order, each with its `line` number (1-based).

    The CLI writes one assistant message as several lines (one per content block) sharing
    `message.id`; they are merged into one entry whose content holds every block, at the
    position of the first line.
    """
    if not Path(path).is_file():
        raise SessionNotFound(
            f"No transcript at {path}.",
            path=path,
            hint="The agent saved no session there: did the run reach the model, and is this "
            "the session id it reported?",
        )
    entries: list[dict[str, Any]] = []
    by_message_id: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as error:
            raise SessionCorrupt(
                f"Line {number} of the transcript {path} is not JSON ({error}): the file is torn "
                "or is no Claude Code transcript.",
                path=path,
                hint="check_history(path) names each torn line (corrupt-line); restore the file, or "
                "delete it to start the session over.",
            ) from None
        entry["line"] = number
        message: dict[str, Any] = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        message_id = message.get("id") if message and entry.get("type") == "assistant" else None
        if message_id and message_id in by_message_id:
            merged = by_message_id[message_id]
            content = merged["message"].get("content")
            extra = message.get("content")
            if isinstance(content, list) and isinstance(extra, list):
                merged["message"]["content"] = content + extra
            merged.setdefault("uuids", [merged.get("uuid")]).append(entry.get("uuid"))
            continue
        if message_id:
            by_message_id[message_id] = entry
        entries.append(entry)
    return entries
