"""The words of an effects report: how a change reached a file, and the diff of what it wrote."""

from __future__ import annotations

import difflib
import os
from typing import Any

from ..word_diff import compact
from .diff import Change
from .routes import Aliases, spellings
from .snapshot import Contents, Snapshot

_SHOWN_DIFF_LINES = 30


def explain(effects: Any, path: str | os.PathLike[str]) -> str:
    """The report for `path`: each change, the route that reached it, the tool call and the content diff."""
    found = effects.violations(path)
    target = effects._covered(path)
    shown = effects.show(target)
    if not found:
        return f"{shown} was not written (under any name reaching it) in {len(effects._runs)} run(s)."
    # One write (or chmod) to an inode shared by hardlinks shows under each name: report it once.
    writes: dict[tuple[Any, ...], list[tuple[Change, str]]] = {}
    for change, route in found:
        before, after = change.before, change.after
        if change.kind in ("modified", "mode_changed") and before and after and before.inode == after.inode:
            key: tuple[Any, ...] = (change.run, change.during, after.inode, after.digest)
        else:
            key = (id(change),)
        group = writes.setdefault(key, [])
        # The file's own name leads its group; its hardlinks follow.
        group.insert(0 if change.path == target else len(group), (change, route))
    lines = [f"{shown} was written — {len(writes)} change(s) reached it:"]
    for group in writes.values():
        change, route = group[0]
        lines.append(effects.describe(change))
        lines.append(f"    route: {route}")
        for other, _ in group[1:]:
            lines.append(f"    the same write shows as {other.shown_as} (a hardlink: the same inode)")
        lines.extend("    " + line for line in content_diff(effects.contents, change))
    return effects._redact("\n".join(lines))


def route_to(effects: Any, change: Change, reach: Aliases, baseline: Snapshot) -> str | None:
    """How `change` reached the file `reach` is about ("its own name; the call named it `x`"), or None."""
    if change.path in reach.names:
        how = reach.names[change.path]
        if (
            change.path != reach.path
            and change.kind == "modified"
            and change.before
            and change.after
            and change.before.inode != change.after.inode
        ):
            how += f"; the write gave it a new inode, so {effects.show(reach.path)}'s own bytes are unchanged"
    elif change.path in reach.parents and change.kind in ("replaced", "deleted"):
        how = f"its parent directory {effects.show(change.path)} was {change.detail}"
    else:
        return None
    named = [
        s
        for call in change.calls
        for s in spellings(
            getattr(call, "input", {}),
            reach,
            baseline,
            change.path,
            workspace=effects.workspace,
            home=effects.home,
            show=effects.show,
        )
    ]
    return how + (f"; the call named it {', '.join(dict.fromkeys(named))}" if named else "")


def content_diff(contents: Contents, change: Change) -> list[str]:
    """The unified diff of a changed file's kept contents, cut to 30 lines."""
    before = contents.read(change.before.digest) if change.before and change.before.kind == "file" else b""
    after = contents.read(change.after.digest) if change.after and change.after.kind == "file" else b""
    if before is None or after is None:
        return ["(content larger than 64 KiB: not kept, no diff)"]
    if before == after:
        return []
    try:
        old, new = before.decode(), after.decode()
    except UnicodeDecodeError:
        return [f"(binary content, {len(before)} → {len(after)} bytes)"]
    lines = compact(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), f"{change.shown_as} before", f"{change.shown_as} after", lineterm=""
        )
    )
    if len(lines) > _SHOWN_DIFF_LINES:
        lines = lines[:_SHOWN_DIFF_LINES] + [f"... {len(lines) - _SHOWN_DIFF_LINES} more diff lines"]
    return lines
