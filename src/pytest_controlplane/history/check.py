"""Is a session history one consistent conversation?  For message lists and Claude Code JSONL transcripts.

    problems = check_history(agent_session.transcript_path())   # or a messages list
    assert not problems, "\\n".join(map(str, problems))

Kinds (severity "error" unless noted):
- corrupt-line          a transcript line that is not JSON
- duplicate-uuid        an entry uuid written twice (a duplicated line, an id collision)
- broken-parent         a parentUuid that no entry has (a dropped line, a uuid never written); a warning in a
                        sidechain (a subagent's lines, which resume does not follow): CLI 2.0.x writes a
                        subagent's last line under a hook message it never saved
- reordered (warning)   an entry before its parent, or a tool_result before its tool_use: the CLI itself writes
                        some lines (2.1.x attachments among them) before the line they name, milliseconds
                        apart, and resume follows parentUuid, not file order
- second-root           a second entry without parent in the main chain (a head replayed as a new root)
- unanswered-tool-use   a tool_use with no tool_result (what a kill mid-tool leaves; every request 400s)
- orphan-tool-result    a tool_result whose tool_use does not exist (or, in a list, is not just before it)
- duplicate-tool-result a tool_use answered twice
- duplicate-tool-use    one tool_use id used twice
- bad-role / first-not-user / same-role-twice (warning; not for a note followed by the question: two user messages
  of text) / duplicate-message   (message lists)
- stale-resume          (with world=) a tool result carried into a resume whose file has changed since, answered
                        from without reading it again or being told (history/stale.py)

Lines without a uuid (summary, api-request, cost-state, queue-operation, file-history-snapshot, ...; the types each
measured release writes are in cli_facts.BOOKKEEPING_SINCE) are bookkeeping of some CLI version and never a problem;
sidechain entries (subagents) form chains of their own and may have roots of their own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ours

__tracebackhide__ = ours  # our errors show without our frames


@dataclass(frozen=True)
class Problem:
    """One inconsistency: what kind, where (a transcript line, 1-based, or a message index), and why."""

    kind: str
    line: int | None
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}" if self.line is None else f"{self.where}: {self.kind}: {self.message}"

    @property
    def where(self) -> str:
        return "the store" if self.line is None else f"line {self.line}"

    @property
    def fix(self) -> str:
        """The usual cause of this kind of problem, and its fix."""
        return FIXES.get(self.kind, "")


# Each kind's usual cause and fix, for the failure that lists it.
FIXES = {
    "torn-store": "the store is written in place (open('w') truncates it before the new content is in): write a "
    "temporary file beside it, flush and fsync it, then os.replace it over the old one",
    "corrupt-line": "a line was cut off mid-write (a crash while appending): write each line whole, or skip a torn "
    "last line when loading",
    "unanswered-tool-use": "a crash between the tool call and its result: on resume, answer every open tool_use (the "
    "CLI adds '[Tool call interrupted]'), or drop it",
    "orphan-tool-result": "a tool_result kept without the assistant message that asked for it: save and load the "
    "history whole, never a tail of it",
    "duplicate-tool-result": "a tool result saved twice (a retry after a crash appended it again): make the save "
    "idempotent (write the whole history, or key results by tool_use id)",
    "duplicate-message": "a message appended twice (a resume replayed what was stored): append only what is new",
    "lost-entry": "the resume rewrote the history and dropped what was stored: load the stored history whole and "
    "append to it",
    "lost-history": "the resume started over although a whole history was stored (or could have been): save "
    "atomically, and load what is stored instead of starting afresh",
    "model-missed-history": "the resumed run did not send the stored tool calls to the model: resume from the stored "
    "history, not from a summary that drops them",
    "effect-twice": "a tool's effect was redone after the resume: record that a call ran before redoing it, or make "
    "the tool idempotent (then list it in idempotent=[...])",
    "resume-failed": "the agent could not resume its own session (the error above says why): make it read what a crash "
    "can leave, or save so that a crash leaves the old store whole",
    "stale-resume": "tell the resumed session what changed, have it read the file again, or start fresh with a summary",
}


def fixes(problems: Iterable[Problem]) -> str:
    """The fix of each kind among `problems`, one line each ("" when none has one)."""
    kinds = dict.fromkeys(p.kind for p in problems if p.fix)
    return "".join(f"\n  {kind}: {FIXES[kind]}" for kind in kinds)


def check_history(source: Any, *, world: str | os.PathLike[str] | None = None) -> list[Problem]:
    """Problems in `source`: a list of messages ({"role", "content"}), or the path of a JSONL transcript.  With
    `world` (the workspace the session ran in), a messages list is also checked for a stale resume: a tool result
    before its last prompt whose file holds something else now, answered from without reading it again or being
    told (`stale-resume`, history/stale.py)."""
    if isinstance(source, str | os.PathLike):
        return check_transcript(Path(source).read_text(encoding="utf-8").splitlines())
    if isinstance(source, Sequence) and all(isinstance(m, dict) and "line" in m for m in source) and source:
        # Entries as agent_session.history gives them for a transcript (read_transcript): check the file.
        raise ConfigError(
            "check_history takes the transcript's path (agent_session.transcript_path()) or a "
            "messages list, not merged transcript entries.",
            hint="Pass agent_session.transcript_path() (or the file's path) instead.",
        )
    messages = list(source)
    if world is None:
        return check_messages(messages)
    from .stale import stale_in

    return check_messages(messages) + stale_in(messages, os.path.abspath(world))


# --- message lists (the loop's history, a session store) ---------------------------------------------


def check_messages(messages: list[Any]) -> list[Problem]:
    problems: list[Problem] = []

    def problem(kind: str, index: int, text: str, severity: str = "error") -> None:
        problems.append(MessageProblem(kind, index, text, severity))

    seen_uses: dict[str, int] = {}
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message or "content" not in message:
            problem("bad-role", index, f"not a message: {str(message)[:80]}")
            continue
        role = message["role"]
        if role not in ("user", "assistant"):
            problem("bad-role", index, f"role {role!r} (only user and assistant belong in messages)")
        if index == 0 and role != "user":
            problem("first-not-user", index, f"the history starts with {role!r}, the API needs a user message first")
        previous = messages[index - 1] if index else None
        if isinstance(previous, dict) and previous.get("role") == role:
            if previous.get("content") == message.get("content"):
                problem("duplicate-message", index, f"the same {role} message twice in a row")
                continue  # whatever else is wrong with it is the duplicate's doing
            elif role != "user" or _answers_tools(previous) or _answers_tools(message):
                # Two user messages of text are a note and the question (the API reads them as one turn).
                problem("same-role-twice", index, f"two {role} messages in a row", "warning")
        for block in blocks(message):
            if block.get("type") == "tool_use":
                use_id = str(block.get("id"))
                if use_id in seen_uses:
                    problem("duplicate-tool-use", index, f"tool_use id {use_id} also at message #{seen_uses[use_id]}")
                seen_uses[use_id] = index
        problems.extend(_pairing_problems(messages, index, role))
    return problems


def _pairing_problems(messages: list[Any], index: int, role: str) -> list[Problem]:
    """Tool calls and results in order: each tool_use of an assistant message answered once by the next message, and
    each tool_result of a user message asked for by the one before."""
    message, found = messages[index], list[Problem]()
    if role == "assistant":
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = (
            [str(b.get("tool_use_id")) for b in blocks(following) if b.get("type") == "tool_result"]
            if isinstance(following, dict) and following.get("role") == "user"
            else []
        )
        for use_id in (str(b.get("id")) for b in blocks(message) if b.get("type") == "tool_use"):
            count = answered.count(use_id)
            if count == 0:
                text = f"tool_use {use_id} has no tool_result in the next message"
                found.append(MessageProblem("unanswered-tool-use", index, text))
            elif count > 1:
                found.append(
                    MessageProblem("duplicate-tool-result", index + 1, f"tool_use {use_id} answered {count} times")
                )
    if role == "user":
        before = messages[index - 1] if index else None
        asked = (
            {str(b.get("id")) for b in blocks(before) if b.get("type") == "tool_use"}
            if isinstance(before, dict) and before.get("role") == "assistant"
            else set()
        )
        for block in blocks(message):
            if block.get("type") == "tool_result" and str(block.get("tool_use_id")) not in asked:
                text = f"tool_result for {block.get('tool_use_id')}, which the message before did not ask for"
                found.append(MessageProblem("orphan-tool-result", index, text))
    return found


@dataclass(frozen=True)
class MessageProblem(Problem):
    """A problem of a message list: where is a message's index."""

    @property
    def where(self) -> str:
        return f"message #{self.line}"


def _answers_tools(message: Any) -> bool:
    return any(block.get("type") == "tool_result" for block in blocks(message))


def blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


# --- Claude Code JSONL transcripts ------------------------------------------------------------------


def check_transcript(lines: Iterable[str]) -> list[Problem]:
    """Problems in a transcript's lines (in file order)."""
    problems: list[Problem] = []
    entries: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            problems.append(Problem("corrupt-line", number, f"not JSON: {line[:60]!r}"))
            continue
        if isinstance(entry, dict):
            entries.append((number, entry))

    first_line: dict[str, int] = {}
    for number, entry in entries:
        uuid = entry.get("uuid")
        if not uuid:
            continue
        if uuid in first_line:
            problems.append(
                Problem("duplicate-uuid", number, f"uuid {uuid} was already written at line {first_line[uuid]}")
            )
        else:
            first_line[uuid] = number
    problems += _chain_problems(entries, first_line) + _tool_problems(entries, first_line)
    return sorted(problems, key=lambda p: (p.line or 0, p.kind))


def _chain_problems(entries: list[tuple[int, dict[str, Any]]], first_line: dict[str, int]) -> list[Problem]:
    """Parents that are missing or come later, and a second root in the main chain."""
    problems: list[Problem] = []
    roots: list[int] = []
    for number, entry in entries:
        uuid = entry.get("uuid")
        if not uuid:
            continue
        parent = entry.get("parentUuid")
        if parent is None:
            logical = entry.get("logicalParentUuid")  # a compaction boundary continues a chain
            if not entry.get("isSidechain") and not (logical and logical in first_line):
                roots.append(number)
        elif parent not in first_line and entry.get("isSidechain"):
            why = (
                f"parentUuid {parent} is not in this sidechain (CLI 2.0.x leaves a subagent's unsaved hook messages "
                "out; resume does not follow sidechains)"
            )
            problems.append(Problem("broken-parent", number, why, "warning"))
        elif parent not in first_line:
            why = f"parentUuid {parent} is not in the transcript (a line was dropped, or never written)"
            problems.append(Problem("broken-parent", number, why))
        elif first_line[parent] > number:
            why = (
                f"its parent {parent} comes later, at line {first_line[parent]} (resume follows parentUuid, so this "
                "alone loses nothing)"
            )
            problems.append(Problem("reordered", number, why, "warning"))
    for number in roots[1:]:
        why = f"a second entry without parent (the first is at line {roots[0]}): resume would see two conversations"
        problems.append(Problem("second-root", number, why))
    return problems


def _tool_problems(entries: list[tuple[int, dict[str, Any]]], first_line: dict[str, int]) -> list[Problem]:
    """Every tool_use answered by exactly one tool_result, after it; no result without its use."""
    problems: list[Problem] = []
    uses: dict[str, int] = {}
    results: dict[str, list[int]] = {}
    for number, entry in entries:
        for block in blocks(entry.get("message")):
            if entry.get("type") == "assistant" and block.get("type") == "tool_use":
                use_id = str(block.get("id"))
                if use_id in uses and uses[use_id] != number:
                    # The same block written again (a duplicated line is already a duplicate-uuid).
                    if entry.get("uuid") not in first_line or first_line[entry["uuid"]] == number:
                        problems.append(
                            Problem("duplicate-tool-use", number, f"tool_use {use_id} also at line {uses[use_id]}")
                        )
                uses.setdefault(use_id, number)
            elif entry.get("type") == "user" and block.get("type") == "tool_result":
                results.setdefault(str(block.get("tool_use_id")), []).append(number)
    for use_id, number in uses.items():
        answers = results.get(use_id, [])
        if not answers:
            why = f"tool_use {use_id} has no tool_result (the run stopped inside the tool or its hooks)"
            problems.append(Problem("unanswered-tool-use", number, why))
        elif len(answers) > 1:  # on another line, or twice in one
            why = f"tool_use {use_id} answered again (first at line {answers[0]})"
            problems.append(Problem("duplicate-tool-result", answers[1], why))
        if answers and answers[0] < number:
            why = f"tool_result for {use_id} comes before its tool_use (line {number})"
            problems.append(Problem("reordered", answers[0], why, "warning"))
    for use_id, answers in results.items():
        if use_id not in uses:
            why = f"tool_result for {use_id}, a tool_use that is not in the transcript"
            problems.append(Problem("orphan-tool-result", answers[0], why))
    return problems


def lost_entries(before: Iterable[str], after: Iterable[str]) -> list[Problem]:
    """Entries (by uuid) of a transcript before a crash that are missing from it after the resume."""

    def uuids(lines: Iterable[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for number, line in enumerate(lines, start=1):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("uuid"):
                found.setdefault(entry["uuid"], number)
        return found

    kept = uuids(after)
    return [
        Problem("lost-entry", number, f"entry {uuid} existed before the crash and is gone after the resume")
        for uuid, number in uuids(before).items()
        if uuid not in kept
    ]
