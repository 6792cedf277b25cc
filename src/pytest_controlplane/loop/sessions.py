"""The seed design's session functions, as thin wrappers over SessionStore — hardened.

    answer, messages = resume_session("cache-investigation", "Is it thread-safe?", store=store,
                                      system=SYSTEM, tools=TOOLS, tool_impls=impls)
    fork_session("cache-investigation", "cache-investigation-ttl", store=store)
    start_fresh_with_summary("cache.py is a TTL cache ...", "Add a lock.", store=store, ...)

`loop` is `run_agentic_loop` or your own `loop(messages, **loop_kwargs) -> (answer, messages)`;
its contract is checked on every call, so a loop that drops history or returns the list it was
given fails here, with the fix, instead of saving a broken session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError, SessionFormatError, StaleSession, ours
from .agent_loop import run_agentic_loop
from .store import FileChange, SessionStore, check_messages, plain

__tracebackhide__ = ours  # our errors show without our frames

OnStale = Literal["raise", "inform", "fresh"]
ON_STALE = ("raise", "inform", "fresh")
MAX_INFORMED_CHARS = 20_000
Loop = Callable[..., Any]


def _store(store: SessionStore | Path | str) -> SessionStore:
    return store if isinstance(store, SessionStore) else SessionStore(store)


def save_session(name: str, messages: Any, *, store: SessionStore | Path | str = "sessions") -> Path:
    return _store(store).save(name, messages)


def load_session(name: str, *, store: SessionStore | Path | str = "sessions") -> list[dict[str, Any]] | None:
    return _store(store).load(name)


def fork_session(source: str, new: str, *, store: SessionStore | Path | str = "sessions") -> Path:
    """Copy `source` to `new`; raises SessionNotFound if `source` does not exist."""
    return _store(store).fork(source, new)


def resume_session(
    name: str,
    prompt: str,
    *,
    store: SessionStore | Path | str = "sessions",
    loop: Loop = run_agentic_loop,
    on_stale: OnStale = "raise",
    summary: str | None = None,
    **loop_kwargs: Any,
) -> tuple[str, list[dict[str, Any]]]:
    """Load session `name` (or start it empty), append `prompt`, run the loop, save; return (answer, messages).

    If files the session read changed since it was saved: `on_stale="raise"` raises StaleSession,
    `"inform"` puts what changed (the new contents) in front of the prompt, `"fresh"` starts the
    session over from `summary` (default: its last answer) and the new contents.
    """
    if on_stale not in ON_STALE:
        raise ConfigError(f"resume_session(on_stale={on_stale!r}): choose one of {', '.join(ON_STALE)}.")
    sessions = _store(store)
    history = sessions.load(name) or []
    changes = sessions.changes(name) if history else []
    if changes:
        if on_stale == "raise":
            listed = ", ".join(f"{c.path} ({'deleted' if c.deleted else 'changed'})" for c in changes)
            raise StaleSession(
                f"Session {name!r} is stale: files it read changed since it was saved: {listed}.",
                changed=changes,
                path=sessions.path(name),
                hint="Resume with on_stale='inform' (tell the model what changed) or 'fresh' (start "
                "over from a summary), or re-read the files yourself.",
            )
        if on_stale == "fresh":
            return start_fresh_with_summary(
                summary or last_answer(history),
                prompt,
                name=name,
                store=sessions,
                loop=loop,
                changes=changes,
                **loop_kwargs,
            )
        prompt = what_changed(changes) + prompt
    answer, messages = call_loop(loop, [*history, {"role": "user", "content": prompt}], loop_kwargs)
    sessions.save(name, messages)
    return answer, messages


def start_fresh_with_summary(
    summary: str,
    prompt: str,
    *,
    name: str | None = None,
    store: SessionStore | Path | str = "sessions",
    loop: Loop = run_agentic_loop,
    changes: Sequence[FileChange] = (),
    **loop_kwargs: Any,
) -> tuple[str, list[dict[str, Any]]]:
    """Start a new conversation from a short curated summary (and what changed); save it as `name` if given."""
    opening = f"Summary of the earlier session:\n{summary.strip()}\n\n" + (what_changed(changes) if changes else "")
    answer, messages = call_loop(loop, [{"role": "user", "content": opening + prompt}], loop_kwargs)
    if name is not None:
        _store(store).save(name, messages)
    return answer, messages


def what_changed(changes: Sequence[FileChange]) -> str:
    """The note an informed resume puts before the prompt: each changed file and its content now."""
    parts = ["Since this session was saved, files it read have changed:"]
    for change in changes:
        if change.deleted:
            parts.append(f"- {change.path} was deleted.")
            continue
        text = change.now or ""
        cut = f"\n[... {len(text) - MAX_INFORMED_CHARS} more characters]" if len(text) > MAX_INFORMED_CHARS else ""
        parts.append(f"- {change.path} now reads:\n```\n{text[:MAX_INFORMED_CHARS]}{cut}\n```")
    return "\n".join(parts) + "\n\n"


def last_answer(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message["role"] == "assistant":
            content = message["content"]
            if isinstance(content, str):
                return content
            texts = [b.get("text", "") for b in content if b.get("type") == "text"]
            if any(texts):
                return "\n".join(texts)
    return "(no earlier answer)"


def call_loop(loop: Loop, messages: list[dict[str, Any]], loop_kwargs: dict[str, Any]) -> tuple[str, list]:
    """Run `loop` and hold it to its contract: (answer, messages), the messages extending the ones given."""
    name = getattr(loop, "__name__", repr(loop))
    given = plain(messages)
    returned = loop(messages, **loop_kwargs)
    if not (isinstance(returned, tuple) and len(returned) == 2):
        raise SessionFormatError(
            f"The agent loop {name} returned {type(returned).__name__}, not (answer, messages).",
            hint="Return the answer and the whole conversation: `return answer, messages`.",
        )
    answer, result = returned
    result = check_messages(result, f"the messages {name} returned")
    if result[: len(given)] != given:
        raise SessionFormatError(
            f"The messages {name} returned do not start with the {len(given)} it was given: "
            "it dropped or rewrote history, and saving them would lose it.",
            hint="Append to the list you were given (or a copy of all of it) and return that.",
        )
    if not any(m["role"] == "assistant" for m in result[len(given) :]):
        raise SessionFormatError(
            f"The messages {name} returned hold no model answer after the prompt: it probably "
            "appended to a copy and returned the list it was given.",
            hint="Return the list you appended the model's replies to.",
        )
    if not isinstance(answer, str):
        raise SessionFormatError(
            f"The agent loop {name} returned a {type(answer).__name__} as its answer, not a str.",
            hint="Return (answer, messages) with the answer's text as a str, as run_agentic_loop does.",
        )
    return answer, result
