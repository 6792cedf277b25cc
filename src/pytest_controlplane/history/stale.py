"""Stale resumes: a resumed session that answers from what a tool read before the world changed.

The seed's central lesson: a session is resumed with its whole history, tool results included; if a file a result
came from has changed since (an order went from "In Transit" to "Delivered"), the model answers from the old result
unless it reads the file again or the prompt says what changed.  Agent-agnostic: it reads what the model was sent on
resume (every agent sends its history), so ClaudeAgent, LoopAgent and CommandAgent are judged alike.

A carried tool result is stale when one of its sources — the workspace files it came from — holds something else now
(or is gone), its last carried read is this one, and the resumed run was neither
- reading it again (a call after the resume has it as a source), nor
- told: the resume's prompt carries the file's new content, or the words the change brought into it (the changed
  field's new value: "it is now Delivered"), or a note of the change (a sentence naming the file with one of
  NOTE_WORDS: "orders.json was updated").  Naming the file alone tells the model nothing.

An agent session knows a call's sources by what its processes read while it ran (effects/reads.py) and what the test
declared; a bare message list (`check_history(messages, world=...)`) by the path its input names.  A fresh session
started with a summary carries no tool result, so it is never stale.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..tool_call import result_text
from .check import MessageProblem, Problem, blocks

KIND = "stale-resume"
# A prompt's sentence naming a file with one of these (as a word's start) is a note that the file changed.
NOTE_WORDS = re.compile(r"\b(?:chang|updat|modif|edit|differ|rewr|replac|delet|remov)\w*", re.I)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n")
_PATH_KEYS = ("path", "file_path", "notebook_path")
_NUMBERED = re.compile(r"^\s*\d+(?:\t|→)", re.M)  # the line numbers the CLI's Read tool puts before each line


@dataclass(frozen=True)
class Carried:
    """One tool call the resumed history carries, with its result."""

    index: int  # the message holding the result
    id: str
    name: str
    input: dict[str, Any]
    result: str


@dataclass(frozen=True)
class Source:
    """A workspace file a carried result came from: as the call left it (`then`) and as the resume found it (`now`);
    a text is None when it was not kept (a big file) or the file is not there."""

    path: str  # absolute
    changed: bool
    then: str | None = None
    now: str | None = None
    gone: bool = False


def carried_results(messages: Sequence[Any]) -> list[Carried]:
    """The tool calls of `messages` (API shape) with the result each got."""
    uses: dict[str, tuple[str, dict[str, Any]]] = {}
    found = []
    for index, message in enumerate(messages):
        for block in blocks(message):
            if block.get("type") == "tool_use":
                uses[str(block.get("id"))] = (str(block.get("name")), dict(block.get("input") or {}))
            elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in uses:
                call_id = str(block.get("tool_use_id"))
                name, given = uses[call_id]
                found.append(Carried(index, call_id, name, given, result_text(block.get("content"))))
    return found


def prompt_of(messages: Sequence[Any]) -> str:
    """The resume's own words: the text of the user messages after the last assistant message (a note and the
    question, or the question alone)."""
    words: list[str] = []
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            break
        content = message.get("content")
        texts = (
            [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
            if isinstance(content, list)
            else content
        )
        words.insert(0, result_text(texts))
    return "\n".join(words)


def stale_reads(
    carried: Iterable[tuple[Carried, Sequence[Source]]],
    *,
    prompt: str,
    reread: Collection[str],
    workspace: str,
    mask: Callable[[str], str] = lambda text: text,
) -> list[Problem]:
    """The stale-resume problems of a resumed session (see the module docstring): `carried`, each carried call with
    its sources; `reread`, the sources of the calls the resumed run made; `mask` hides secrets in what is shown."""
    latest: dict[str, tuple[Carried, Source]] = {}
    for read, sources in carried:
        for source in sources:
            latest[source.path] = (read, source)  # a later carried read of the file supersedes an earlier one
    problems: list[Problem] = []
    for read, source in sorted(latest.values(), key=lambda pair: pair[0].index):
        relative = os.path.relpath(source.path, workspace)
        if not source.changed or source.path in reread or informed(prompt, source, relative):
            continue
        shown = "too big to show" if source.now is None else f"now {mask(_clip(source.now))!r}"
        now = "it is gone" if source.gone else shown
        problems.append(
            MessageProblem(
                KIND,
                read.index,
                f"the resumed session carries the {read.name} result of {relative} as it was read "
                f"({mask(_clip(read.result))!r}), and {relative} has changed since ({now}); the resumed run neither "
                f"read it again nor was told what changed. Fix: tell the resumed session what changed (its new "
                f"content, or a note that {relative} changed), have it read {relative} again, or start fresh with a "
                f"summary (start_fresh_with_summary).",
            )
        )
    return problems


def informed(prompt: str, source: Source, relative: str) -> bool:
    """Whether `prompt` tells of the change to `source`: its new content, the words the change brought into it, or a
    note of the change (a sentence naming the file with one of NOTE_WORDS)."""
    said = _words(prompt)
    if source.now is not None:
        now = _words(source.now)
        if now and _holds(said, now):
            return True
        if source.then is not None:
            old = _words(source.then)
            matcher = difflib.SequenceMatcher(None, old, now, autojunk=False)
            brought = [now[j1:j2] for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("replace", "insert")]
            brought = [part for part in brought if not _holds(old, part)]  # words it had already say nothing new
            if brought and all(_holds(said, part) for part in brought):
                return True
    names = (relative, os.path.basename(relative))
    return any(any(n in s for n in names) and NOTE_WORDS.search(s) for s in _SENTENCES.split(prompt))


def stale_in(messages: Sequence[Any], workspace: str) -> list[Problem]:
    """A whole message list read as a resumed session: its last prompt (the user text after the last assistant
    message with a tool call or answer before it) is the resume; a call's source is the workspace file its input's
    path names, as its result showed it and as the file is in `workspace` now."""
    start = _last_prompt(messages)
    if start is None:
        return []
    carried = []
    for read in carried_results(messages[:start]):
        path = _named(read.input, workspace)
        if path is not None:
            try:
                with open(path, "rb") as file:
                    now: str | None = file.read().decode("utf-8", "replace")
            except OSError:
                now = None
            then = _NUMBERED.sub("", read.result).strip()
            changed = now is None or _NUMBERED.sub("", now).strip() != then
            carried.append((read, [Source(path, changed, then, now, gone=now is None)]))
    later = {path for m in messages[start:] for b in blocks(m)
             if b.get("type") == "tool_use" and (path := _named(b.get("input") or {}, workspace))}  # fmt: skip
    return stale_reads(carried, prompt=prompt_of(messages[: start + 1]), reread=later, workspace=workspace)


def _last_prompt(messages: Sequence[Any]) -> int | None:
    """The index of the last user message of text that follows an assistant message (the latest prompt)."""
    for index in range(len(messages) - 1, 0, -1):
        message = messages[index]
        if (
            isinstance(message, dict)
            and message.get("role") == "user"
            and not any(b.get("type") == "tool_result" for b in blocks(message))
        ):
            return index
    return None


def _named(given: dict[str, Any], workspace: str) -> str | None:
    """The workspace file a tool input's path names, if any."""
    named = next((given[k] for k in _PATH_KEYS if isinstance(given.get(k), str)), None)
    if named is None:
        return None
    path = os.path.normpath(os.path.join(workspace, os.path.expanduser(named)))
    return path if path.startswith(workspace.rstrip("/") + "/") else None


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def _holds(words: list[str], part: list[str]) -> bool:
    """Whether `part` occurs in `words`, word for word."""
    return any(words[i : i + len(part)] == part for i in range(len(words) - len(part) + 1))


def _clip(text: str, limit: int = 120) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
