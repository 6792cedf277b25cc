"""What changed between two snapshots, entry by entry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .snapshot import Entry, Snapshot

KINDS = ("created", "modified", "deleted", "replaced", "mode_changed")


@dataclass
class Change:
    """One path that changed: how, and (once an Effects timeline attributes it) during which tool call."""

    path: str  # absolute
    kind: str  # one of KINDS
    before: Entry | None
    after: Entry | None
    detail: str
    run: int = 0  # which run of the session (1-based)
    calls: tuple[Any, ...] = ()  # the ToolCall(s) it happened during, when known
    during: str = ""  # the same in words: "Bash call #3 (`sed -i ...`)", "the agent's start-up", ...
    bookkeeping: bool = False  # the agent's own state (transcripts, sockets), not an effect of its tools
    by_hook: str = ""  # the hook(s) that made it, while they ran (their labels), when a hook did
    users_hook: bool = False  # made by the user's own hook (not one the bypass harness planted): not the agent's doing
    shown_as: str = field(default="", repr=False)  # the path as reports show it (relative to the workspace, ~/...)

    def __str__(self) -> str:
        where = f" during {self.during}" if self.during else ""
        return f"{self.shown_as or self.path}: {self.kind} ({self.detail}){where}"


def compare(before: Snapshot, after: Snapshot) -> list[Change]:
    """Every path created, modified, deleted, replaced or re-moded from `before` to `after`, in path order."""
    changes: list[Change] = []
    for path in sorted(before.entries.keys() | after.entries.keys()):
        old, new = before.entries.get(path), after.entries.get(path)
        if old is None and new is not None:
            if after.covers(path) and before.covers(path):
                changes.append(Change(path, "created", None, new, _describe_new(new)))
        elif new is None and old is not None:
            if before.covers(path) and after.covers(path):
                changes.append(Change(path, "deleted", old, None, f"{_name(old.kind)} deleted"))
        elif old is not None and new is not None and old != new:
            change = _compare_entry(path, old, new)
            if change is not None:
                changes.append(change)
    return changes


def _compare_entry(path: str, old: Entry, new: Entry) -> Change | None:
    mode = f"mode {old.mode:04o} → {new.mode:04o}" if old.mode != new.mode else ""
    if old.kind != new.kind:
        return Change(
            path,
            "replaced",
            old,
            new,
            f"{_name(old.kind)} → {_name(new.kind)}" + (f" → {new.target}" if new.kind == "symlink" else ""),
        )
    if old.kind == "file":
        if old.digest != new.digest:
            detail = f"content changed, {old.size} → {new.size} bytes"
        elif old.inode != new.inode:
            detail = "rewritten with the same content"
        elif old.mtime_ns != new.mtime_ns:
            detail = "rewritten with the same content"
        else:
            detail = ""
        if old.inode != new.inode:
            detail += ", new inode: written to a new file and renamed over the old name"
        if detail:
            return Change(path, "modified", old, new, detail + (f", {mode}" if mode else ""))
    elif old.kind == "symlink" and old.target != new.target:
        return Change(path, "modified", old, new, f"symlink now → {new.target} (was → {old.target})")
    elif old.inode != new.inode:
        return Change(path, "replaced", old, new, f"{_name(old.kind)} deleted and made anew")
    if mode:
        return Change(path, "mode_changed", old, new, mode)
    return None


def _describe_new(entry: Entry) -> str:
    if entry.kind == "symlink":
        return f"new symlink → {entry.target}"
    if entry.kind == "file":
        return f"new file, {entry.size} bytes"
    return f"new {_name(entry.kind)}"


def _name(kind: str) -> str:
    return {"dir": "directory", "other": "special file"}.get(kind, kind)
