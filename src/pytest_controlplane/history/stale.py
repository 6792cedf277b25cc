"""Stale resumes: a resumed session that answers from what a tool read before the world changed.

The seed's central lesson: a session is resumed with its whole history, tool results included; if a file it read has
changed since (an order went from "In Transit" to "Delivered"), the model answers from the old result unless it reads
the file again or the prompt says what changed.  Agent-agnostic: it reads what the model was sent on resume (every
agent sends its history) and what the files held, so ClaudeAgent, LoopAgent and CommandAgent are judged alike.

A carried tool result is stale when
- its source is a workspace file, known by the tool input's path (`path`, `file_path`, `notebook_path`, the file a
  `cat`/`head`/`tail`/`less` command names) or by the result's content matching a version of a file as it was, and
- the file holds something else now (or is gone), and
- the resumed run neither read it again (no tool call after the resume names it) nor was told (the resume's prompt
  names neither the file nor its new content).

A fresh session started with a summary carries no tool result, so it is never stale.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..tool_call import result_text
from .check import MessageProblem, Problem, blocks

KIND = "stale-resume"
_PATH_KEYS = ("path", "file_path", "notebook_path")
_READERS = ("cat", "head", "tail", "less", "more", "nl", "bat")
_NUMBERED = re.compile(r"^\s*\d+(?:\t|→)", re.M)  # the line numbers the CLI's Read tool puts before each line
MIN_MATCH = 8  # shorter results ("ok", "{}") match too many files to say which one was read


@dataclass(frozen=True)
class Carried:
    """One tool call the resumed history carries, with its result."""

    index: int  # the message holding the result
    name: str
    input: dict[str, Any]
    result: str


def carried_results(messages: Sequence[Any]) -> list[Carried]:
    """The tool calls of `messages` (API shape) with the result each got."""
    uses: dict[str, tuple[str, dict[str, Any]]] = {}
    found = []
    for index, message in enumerate(messages):
        for block in blocks(message):
            if block.get("type") == "tool_use":
                uses[str(block.get("id"))] = (str(block.get("name")), dict(block.get("input") or {}))
            elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in uses:
                name, given = uses[str(block.get("tool_use_id"))]
                found.append(Carried(index, name, given, result_text(block.get("content"))))
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
    carried: Iterable[Carried],
    *,
    prompt: str,
    after: Iterable[tuple[str, dict[str, Any]]],
    workspace: str,
    now: Callable[[str], bytes | None],
    then: Mapping[str, Sequence[bytes]] | None = None,
    mask: Callable[[str], str] = lambda text: text,
) -> list[Problem]:
    """The stale-resume problems of a resumed session (see the module docstring).  `now(path)`: a workspace file's
    content at the resume (None: gone); `then`: the versions each file had before it (to know a result by its content
    when no path says which file it is); `after`: the (name, input) of the calls the resumed run made; `mask` hides
    secrets in the old and new content shown."""
    later = [f"{name} {_flat(given)}" for name, given in after]
    problems: list[Problem] = []
    for read in carried:
        path = _source(read, workspace, then or {})
        if path is None:
            continue
        old, new = _normal(read.result), now(path)
        shown_new = new.decode("utf-8", "replace") if new is not None else None
        if shown_new is not None and _normal(shown_new) == old:
            continue  # the file still holds what was read
        relative = os.path.relpath(path, workspace)
        names = (relative, os.path.basename(path))
        if any(n in call for call in later for n in names) or any(n in prompt for n in names):
            continue  # read again, or the prompt says which file changed
        if shown_new is not None and _normal(shown_new) and _normal(shown_new) in _normal(prompt):
            continue  # the prompt carries the new content
        now_text = "it is gone" if shown_new is None else f"now {mask(_clip(shown_new))!r}"
        problems.append(
            MessageProblem(
                KIND,
                read.index,
                f"the resumed session carries the {read.name} result of {relative} as it was read "
                f"({mask(_clip(read.result))!r}), and {relative} has changed since ({now_text}); the resumed run "
                f"neither read it again nor was told. Fix: tell the resumed session what changed (the seed's "
                f"inform_of_change), have it read {relative} again, or start fresh with a summary "
                f"(start_fresh_with_summary).",
            )
        )
    return problems


def stale_in(messages: Sequence[Any], workspace: str) -> list[Problem]:
    """A whole message list read as a resumed session: its last prompt (the user text after the last assistant
    message with a tool call or answer before it) is the resume; the files are as they are in `workspace` now."""
    start = _last_prompt(messages)
    if start is None:
        return []

    def now(path: str) -> bytes | None:
        try:
            with open(path, "rb") as file:
                return file.read()
        except OSError:
            return None

    after = [(str(b.get("name")), dict(b.get("input") or {})) for m in messages[start:] for b in blocks(m)
             if b.get("type") == "tool_use"]  # fmt: skip
    return stale_reads(
        carried_results(messages[:start]), prompt=prompt_of(messages[:start + 1]), after=after, workspace=workspace,
        now=now,
    )  # fmt: skip


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


def _source(read: Carried, workspace: str, then: Mapping[str, Sequence[bytes]]) -> str | None:
    """The workspace file a carried result came from: named by the input, else known by its content."""
    named = next((read.input[k] for k in _PATH_KEYS if isinstance(read.input.get(k), str)), None)
    command = read.input.get("command")
    if named is None and isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            words = []
        if len(words) >= 2 and os.path.basename(words[0]) in _READERS and not words[-1].startswith("-"):
            named = words[-1]
    if named is not None:
        path = os.path.normpath(os.path.join(workspace, os.path.expanduser(named)))
        return path if path == workspace or path.startswith(workspace.rstrip("/") + "/") else None
    result = _normal(read.result)
    if len(result) < MIN_MATCH:
        return None
    return next(
        (p for p, versions in then.items() if any(_normal(v.decode("utf-8", "replace")) == result for v in versions)),
        None,
    )


def _normal(text: str) -> str:
    return _NUMBERED.sub("", text).strip()


def _flat(given: dict[str, Any]) -> str:
    return " ".join(str(v) for v in given.values())


def _clip(text: str, limit: int = 120) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
