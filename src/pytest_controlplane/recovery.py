"""Judging a resume after a crash: the history the agent ends with must be one consistent history, keep what was
stored before the crash, be what the model is shown, and hold no tool effect done twice.  `crash()` (with `then=`)
and `crash_everywhere` share this one judgement, for every kind of agent and store.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .errors import ConfigError, ControlPlaneError
from .history.check import Problem, lost_entries
from .history.stored import JSONL, Stored, read_stored, stored_messages


def resume_and_judge(
    session: Any,
    result: Any,
    session_id: str,
    stored_first: Stored | None,
    then: str,
    idempotent: Sequence[str],
) -> Any:
    """Resume the crashed session with `then` (or start over when nothing was stored) and judge what it ends with:
    one consistent history, nothing stored before the crash lost, every stored tool call shown to the model, no
    effect done twice.  `stored_first`: the store before the crashed run."""
    at_crash = stored_history(session.agent, session.world, session_id)
    # What the resume must keep: the store at the crash, else (torn or gone) the last whole one before it.
    known = next((s for s in (at_crash, result.before_cut, stored_first) if s is not None and not s.torn), None)
    crashed_run, requests_before = len(session.runs), len(session.gateway.exchanges)
    try:
        if (at_crash is None and known is None) or (at_crash is not None and at_crash.empty_transcript):
            # Nothing stored, or killed before the CLI saved the prompt: bookkeeping lines, which it cannot resume.
            empty = f"the transcript held no conversation: {at_crash.bookkeeping()}" if at_crash else ""
            result.resumed = f"started over ({empty or 'nothing was stored'})"
            session_id, known = session.run(then).session_id or session_id, None if empty else known
        else:
            result.resumed = "resumed"
            session.resume(then, session=session_id)
    except ControlPlaneError as error:
        result.resumed = "resume failed"
        result.after.append(Problem("resume-failed", None, _why(error)))
        return result
    after = stored_history(session.agent, session.world, session_id)
    result.history = after.content if after is not None else None
    result.after.extend(after.check() if after is not None else [])
    result.after.extend(lost(known, after, intact=known is at_crash))
    first = next((e for e in session.gateway.exchanges[requests_before:] if e.request.route == "/v1/messages"), None)
    if first is not None and known is not None:
        missing = [i for i in tool_use_ids(known) if i.encode() not in first.request.body]
        if missing:
            result.after.append(
                Problem(
                    "model-missed-history",
                    None,
                    f"the first request after the resume lacks stored tool calls {missing}",
                )
            )
    result.after.extend(done_twice(session, crashed_run, set(idempotent)))
    return result


def refuse_empty(agent: Any, world: Any, session_id: str) -> None:
    """A resume of a transcript that holds no conversation is said as exactly that, before the CLI fails on it."""
    stored = stored_history(agent, world, session_id)
    if stored is not None and stored.empty_transcript:
        raise ConfigError(
            f"Session {session_id} holds no conversation: its transcript {stored.path} has "
            f"{stored.bookkeeping()}, written before the run that made it stopped; the CLI cannot resume it (it "
            "says 'No conversation found').",
            hint="Start the session anew: agent_session.run(prompt).",
        )


def _why(error: ControlPlaneError) -> str:
    """The first line of a failed resume's error, and the last line the agent wrote on stderr (its own reason)."""
    first = str(error).splitlines()[0]
    stderr = getattr(error, "stderr", [])
    return f"{first} ({stderr[-1].strip()})" if stderr else first


def stored_history(agent: Any, world: Any, session_id: str) -> Stored | None:
    """What the agent has stored for `session_id` (None: nothing, or the agent keeps no store we know of)."""
    reader = getattr(agent, "stored", None)
    try:
        return reader(world, session_id) if callable(reader) else read_stored(agent.transcript(world, session_id))
    except ConfigError:
        return None  # the agent keeps no store we know of


def lost(known: Stored | None, after: Stored | None, *, intact: bool = True) -> list[Problem]:
    """What was stored before the crash (`known`) and is missing after the resume.  `intact`: the store survived
    the crash as it was; else it was torn or gone, and a resume without `known` started over (lost-history)."""
    if known is None or known.content is None or not known.content or (after is not None and after.torn):
        return []
    if after is None:
        return [
            Problem(
                "lost-history",
                None,
                f"nothing is stored after the resume; the store held {_count(known)} before the crash",
            )
        ]
    assert after.content is not None  # a torn store (content None) returned above
    if known.kind == JSONL and after.kind == JSONL:
        dropped = lost_entries(known.content, after.content or [])
        if intact or not dropped:
            return dropped
    elif after.content[: len(known.content)] == known.content:
        return []
    elif intact:
        return [
            Problem(
                "lost-entry",
                None,
                "the messages stored before the crash are not the start of the history after the resume",
            )
        ]
    return [
        Problem(
            "lost-history",
            None,
            f"the resume started over: the store held {_count(known)} before the save "
            "that was cut off, and none of it is in the history after it",
        )
    ]


def _count(stored: Stored) -> str:
    n = len(stored.content or [])
    return f"{n} {'transcript line' if stored.kind == JSONL else 'message'}{'' if n == 1 else 's'}"


def tool_use_ids(stored: Stored | None) -> list[str]:
    messages = stored_messages(stored) if stored is not None else []
    return [
        str(b.get("id"))
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


def done_twice(session: Any, crashed_run: int, idempotent: set[str]) -> list[Problem]:
    """Tool calls (same tool, same input) whose effects happened both before the crash and after the resume."""

    def effects_by_call(run: int) -> dict[tuple[str, str], list[str]]:
        found: dict[tuple[str, str], list[str]] = {}
        for change in session.effects.diff:
            if change.run == run:
                for call in change.calls:
                    key = (call.name, json.dumps(call.input, sort_keys=True))
                    found.setdefault(key, []).append(change.shown_as)
        return found

    before = effects_by_call(crashed_run)
    after: dict[tuple[str, str], list[str]] = {}
    for run in range(crashed_run + 1, len(session.runs) + 1):
        after.update(effects_by_call(run))
    return [
        Problem(
            "effect-twice",
            None,
            f"{name} {tool_input[:80]} changed {', '.join(sorted(set(paths)))} before "
            "the crash and again after the resume",
        )
        for (name, tool_input), paths in before.items()
        if (name, tool_input) in after and name not in idempotent
    ]
