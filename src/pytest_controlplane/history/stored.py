"""What an agent stored for a session, in the shapes agents really write, read the same way for every check.

Detected from the file's content (never from a guess about the agent):
- Claude Code JSONL        one entry per line, with `type` and `uuid`/`sessionId` (checked line by line)
- JSONL of messages        one {"role", "content"} per line
- a JSON messages list     [{"role", "content"}, ...] — the seed's json.dumps of its list, SDK blocks model_dump()ed
- a JSON object that holds one under "messages" (SessionStore's file, and most hand-written stores)

A file that is not one whole JSON document (a save cut off part-way, an empty file) is the problem
`torn-store`; a document in none of these shapes is an error that names the file and the `history=`
option of CommandAgent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SessionCorrupt, ours
from .check import Problem, check_messages, check_transcript

__tracebackhide__ = ours  # our errors show without our frames

JSONL = "jsonl"  # Claude Code transcript lines
MESSAGES = "messages"


@dataclass
class Stored:
    """A stored session: `kind` JSONL (its lines) or MESSAGES (the messages list); `content` is None when torn."""

    kind: str
    content: list[Any] | None
    path: Path | None = None
    problems: list[Problem] = field(default_factory=list)  # what reading it found (torn-store, corrupt-line)

    @property
    def torn(self) -> bool:
        return self.content is None

    @property
    def empty_transcript(self) -> bool:
        """A whole transcript that holds no message, only the CLI's bookkeeping lines (the queue-operation lines it
        writes first; 2.1.337 an api-request-route line before them: cli_facts.BOOKKEEPING_SINCE) or none at all:
        what a run killed before it saved the prompt leaves.  The CLI cannot resume it ("No conversation found")."""
        return (
            self.kind == JSONL
            and self.content is not None
            and not any(isinstance(m, dict) and m.get("role") for m in stored_messages(self))
        )

    def bookkeeping(self) -> str:
        """What an empty transcript holds: `only N bookkeeping line(s) (kind, ...)`, or `nothing (an empty file)`."""
        entries = [_json_line(line) for line in self.content or [] if line.strip()]
        if not entries:
            return "nothing (an empty file)"
        kinds = dict.fromkeys(str(e.get("type", "?")) if isinstance(e, dict) else "?" for e in entries)
        return f"only {len(entries)} bookkeeping line{'' if len(entries) == 1 else 's'} ({', '.join(kinds)})"

    def check(self) -> list[Problem]:
        """Reading problems, then the history check of what could be read."""
        if self.content is None:
            return list(self.problems)
        found = check_transcript(self.content) if self.kind == JSONL else check_messages(self.content)
        return self.problems + found


def read_stored(path: Path) -> Stored | None:
    """The session stored at `path` (None if there is no file)."""
    if not path.is_file():
        return None
    data = path.read_bytes()
    text = data.decode("utf-8", "replace")
    try:
        document = json.loads(text)
    except ValueError as error:
        lines = text.splitlines()
        first = _json_line(lines[0]) if lines else None
        if isinstance(first, dict) or path.suffix == ".jsonl":  # JSONL: a line per document, one torn (or none yet)
            return _jsonl(path, lines)
        return torn(path, len(data), f"not a whole JSON document ({error})" if data else "empty")
    if isinstance(document, dict) and "role" in document:
        return _jsonl(path, text.splitlines())  # one line of JSONL messages
    if isinstance(document, dict) and isinstance(document.get("messages"), list):
        return Stored(MESSAGES, document["messages"], path)
    if isinstance(document, list) and all(isinstance(m, dict) and "role" in m for m in document):
        return Stored(MESSAGES, document, path)
    if isinstance(document, dict) and (document.get("uuid") or document.get("sessionId")):
        return Stored(JSONL, text.splitlines(), path)  # a transcript of one line
    raise unknown_format(path, f"a JSON {type(document).__name__} that is not a messages list")


def torn(path: Path | None, size: int, why: str) -> Stored:
    where = f"{path} ({size} bytes)" if path is not None else "the stored session"
    return Stored(
        MESSAGES,
        None,
        path,
        [Problem("torn-store", None, f"{where} cannot be read: {why}; a save was cut off part-way")],
    )


def unknown_format(path: Path, what: str) -> SessionCorrupt:
    return SessionCorrupt(
        f"Cannot read the session stored at {path}: {what}. Known shapes: Claude Code JSONL, JSONL of messages, a "
        'JSON list of messages, or a JSON object with a "messages" list.',
        path=path,
        hint="Tell pytest-controlplane how to read it: CommandAgent(..., history=lambda world, session_id: "
        "<the messages list, or None if nothing is stored>).",
    )


def _json_line(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _jsonl(path: Path, lines: list[str]) -> Stored:
    """Claude Code transcript lines, or messages one per line (a torn line is a corrupt-line problem)."""
    parsed = [(number, _json_line(line)) for number, line in enumerate(lines, start=1) if line.strip()]
    if not parsed or any(isinstance(entry, dict) and ("uuid" in entry or "sessionId" in entry) for _, entry in parsed):
        return Stored(JSONL, lines, path)
    if not all(isinstance(entry, dict) and "role" in entry for _, entry in parsed if entry is not None):
        raise unknown_format(path, "JSON lines that are neither Claude Code transcript entries nor messages")
    problems = [
        Problem("corrupt-line", number, f"not JSON: {lines[number - 1][:60]!r}")
        for number, entry in parsed
        if entry is None
    ]
    return Stored(MESSAGES, [entry for _, entry in parsed if entry is not None], path, problems)


def stored_messages(stored: Stored) -> list[Any]:
    """The messages of a stored session (a transcript's lines read as their messages; a torn line is None)."""
    if stored.content is None:
        return []
    if stored.kind == MESSAGES:
        return stored.content
    return [entry.get("message") if isinstance(entry, dict) else None for entry in map(_json_line, stored.content)]
