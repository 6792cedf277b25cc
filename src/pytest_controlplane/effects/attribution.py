"""Which tool call a change happened during: the checkpoints around it, and what the model had asked for."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..tool_call import ToolCall
from .snapshot import Snapshot


@dataclass
class HookWindow:
    """A hook process running, from its "hook-start" checkpoint to its "hook-end": what changed meanwhile is its doing,
    unless another process of the agent was alive then (`credited` False: attributed as if the hook had not run)."""

    label: str  # "the PreToolUse command hook `guard.sh` (.claude/settings.json)"
    event: str = ""
    tool_use_id: str = ""  # the call it was run for (a tool event's hook)
    users: bool = True  # the user's own hook (False: planted by the bypass harness, an attacker's)
    credited: bool = True


@dataclass
class Checkpoint:
    """A snapshot taken during a run, and what it was taken at."""

    kind: str  # "start", "request", "pre", "post", "end"; "hook-start", "hook-end"
    ref: Any  # request index, or tool_use id; a hook run's id
    snap: Snapshot
    call: tuple[str, dict[str, Any]] | None = None  # (tool name, input) at a "pre" checkpoint
    hook: HookWindow | None = None  # at "hook-start"
    time: float = field(default_factory=time.time)  # when it was taken (egress records are put down by time)
    read: frozenset[str] = frozenset()  # the files read since the checkpoint before it (reads.py)


def hook_windows(checkpoints: list[Checkpoint]) -> list[list[HookWindow]]:
    """For each interval between two checkpoints, the hook windows open throughout it.  A window closes at its
    "hook-end", and at the latest when the CLI goes on past its hook (a tool hook's call has run, a model request
    went out, the run ended): a hook the CLI killed leaves no "hook-end"."""
    open_: dict[Any, HookWindow] = {}
    found = []
    for point in checkpoints[:-1]:
        if point.kind == "hook-start" and point.hook is not None:
            open_[point.ref] = point.hook
        elif point.kind == "hook-end":
            open_.pop(point.ref, None)
        elif point.kind == "request":
            open_.clear()
        elif point.kind == "post":
            for ref, window in list(open_.items()):
                if window.event == "PreToolUse" and window.tool_use_id == point.ref:
                    del open_[ref]
        found.append([w for w in open_.values() if w.credited])
    return found


def intervals(checkpoints: list[Checkpoint]) -> Iterator[tuple[int, list[HookWindow], int, int]]:
    """Each interval between two checkpoints (from checkpoint i to i + 1): i, the hook windows open throughout it, and
    the nearest checkpoints around it that are not a hook's.  Hook checkpoints only split the timeline: outside a
    hook's window what happens is put down as if they were not there, to the call between those other two."""
    plain = [i for i, point in enumerate(checkpoints) if not point.kind.startswith("hook-")]
    for i, windows in enumerate(hook_windows(checkpoints)):
        yield i, windows, max(j for j in plain if j <= i), min(j for j in plain if j > i)


def by_hooks(windows: list[HookWindow], calls: dict[Any, tuple[Any, int]]) -> tuple[tuple[Any, ...], str]:
    """The calls and the words for a change made while `windows` ran: "the PreToolUse command hook `x` (...), for
    Write call #1"."""
    known = list({w.tool_use_id: calls[w.tool_use_id] for w in windows if w.tool_use_id in calls}.values())
    words = " and ".join(dict.fromkeys(w.label for w in windows))
    if known:
        words += ", for " + " and ".join(label(*c) for c in known)
    return tuple(c for c, _ in known), words


def attribute(
    before: Checkpoint, after: Checkpoint, calls: dict[Any, tuple[Any, int]], asked: dict[int, list[str]]
) -> tuple[tuple[Any, ...], str]:
    """The calls a change between two checkpoints is attributed to, and the words for when it happened. `calls`: the
    run's calls by id, with their number in the session; `asked`: the ids each model request's answer asked for."""
    if before.kind == "pre":
        call = _call(before.ref, before.call, calls)
        return (call[0],), label(*call)
    if after.kind == "pre":
        call = _call(after.ref, after.call, calls)
        return (), f"the PreToolUse hooks or the agent, before {label(*call)} ran"
    if before.kind == "post":
        call = _call(before.ref, before.call, calls)
        return (), f"the PostToolUse hooks or the agent, after {label(*call)} ran"
    if before.kind == "start":
        return (), "the agent's start-up, before its first model request" if after.kind == "request" else "the run"
    if before.kind == "request":
        ids = asked.get(before.ref, [])
        known = [_call(i, None, calls) for i in ids]
        if len(known) == 1:
            return (known[0][0],), label(*known[0])
        if known:
            return tuple(c for c, _ in known), "one of " + ", ".join(label(*c) for c in known)
        return (), f"the agent's turn after model request #{before.ref + 1} (which asked for no tool)"
    return (), "the run"


def _call(
    tool_use_id: Any, seen: tuple[str, dict[str, Any]] | None, calls: dict[Any, tuple[Any, int]]
) -> tuple[Any, int | None]:
    if tool_use_id in calls:
        return calls[tool_use_id]
    name, tool_input = seen or ("tool", {})
    return ToolCall(str(tool_use_id), name, dict(tool_input)), None  # e.g. a subagent's call


def label(call: Any, number: int | None) -> str:
    """A call as a failure names it: `Bash call #2 (`rm -rf x`)`, its input cut to 80 characters."""
    tool_input = call.input or {}
    key = next(
        (
            k
            for k in ("command", "file_path", "notebook_path", "path", "url", "pattern")
            if isinstance(tool_input.get(k), str)
        ),
        None,
    )
    summary = " ".join((tool_input[key] if key else json.dumps(tool_input)).split())
    if len(summary) > 80:
        # A path's end says which file; a command's start says what it does.
        summary = "..." + summary[-77:] if key in ("file_path", "notebook_path", "path") else summary[:77] + "..."
    return f"{call.name} call{f' #{number}' if number else ''} (`{summary}`)"


def tool_uses_by_request(exchanges: Sequence[Any]) -> dict[int, list[str]]:
    """For each model request (by index), the ids of the tool calls its answer asked for."""
    asked: dict[int, list[str]] = {}
    for exchange in exchanges:
        if exchange.status != 200:
            continue
        answer = exchange.answer or {}
        asked[exchange.request.index] = [
            b["id"] for b in answer.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
    return asked
