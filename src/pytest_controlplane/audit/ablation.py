"""Each hook and rule removed in turn (`controlplane audit DIR --coverage`): the cells that flip.

Coverage (coverage.py) reads who decided each item from the run's signals; removal proves it.  After the audit, the
same audit (its targets, route classes, modes, sandbox levels, quick or not, the everyday family with it) is played on
a copy of DIR without any change (the baseline), then once per PreToolUse command hook and permission rule of DIR's
project settings, on a copy with that one entry taken out of its file.  A cell that differs from the baseline flips:
`held -> bypassed` is what the entry alone stopped, `done -> blocked` work it alone let through (an allow rule), and
no flip at all is an entry the rest of the policy backs up, or one that never decided anything.

`run(directory, play)` plays them; `play(entry, name)` is the caller's: the audit on a copy of the directory without
`entry` (None: the baseline).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.settings_hooks import project_settings
from ..atomic import write_atomically
from .coverage import RULE_KINDS, Entry, entries_of
from .fix import key, settings_text
from .records import Record
from .reports import append_section

Play = Callable[[Entry | None, str], list[Record]]
SHOWN = 6  # flips named per entry in the report; audit.json keeps them all


@dataclass
class Removal:
    """One entry taken out, and the cells of the same audit that changed without it."""

    entry: Entry
    played: int = 0
    flips: list[tuple[Record, Record]] = field(default_factory=list)  # (the baseline's, without the entry)

    @property
    def line(self) -> str:
        """`without deny Read(./.env) in .claude/settings.json: 3 cell(s) flip: read .env by cat .env (default): held
        -> bypassed; ...` or why nothing did."""
        head = f"without {_name(self.entry)}: "
        if not self.played:
            return head + "not judged: the play without it ran no item (see its log)"
        if not self.flips:
            why = "the rest of the policy decides the same" if self.entry.flag == "decisive" else self.entry.flag
            return head + f"no cell flips of {self.played} ({why})"
        shown = "; ".join(_flip(before, after) for before, after in self.flips[:SHOWN])
        more = f"; and {len(self.flips) - SHOWN} more" if len(self.flips) > SHOWN else ""
        return head + f"{len(self.flips)} of {self.played} cell(s) flip: {shown}{more}"

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.entry.label,
            "kind": self.entry.kind,
            "where": self.entry.where,
            "flag": self.entry.flag,
            "played": self.played,
            "flips": [
                {"key": list(key(after)), "route": after.spelled, "before": before.cell, "after": after.cell}
                for before, after in self.flips
            ],  # fmt: skip
            "line": self.line,
        }


def _name(entry: Entry) -> str:
    return entry.label if entry.kind == "hook" else f"{entry.kind} {entry.label}"


def _flip(before: Record, after: Record) -> str:
    """`read .env by Read, relative (default): held -> bypassed`; `everyday Bash npm test: done -> blocked`."""
    what = f"everyday {before.route}" if before.everyday else f"{before.family} {before.target} by {before.spelled}"
    column = f" ({before.mode})" if before.mode != "-" else ""
    return f"{what}{column}: {before.cell} -> {after.cell}"


def entries(directory: Path) -> list[Entry]:
    """The hooks and rules of `directory`'s project settings, in the order written."""
    return entries_of(project_settings(directory))


def without(text: str, entry: Entry) -> str:
    """A settings file's `text` with `entry` taken out (every copy of it in the file), in the file's own layout."""
    data = json.loads(text)
    if entry.kind in RULE_KINDS:
        rules = data.get("permissions", {}).get(entry.kind, [])
        data["permissions"][entry.kind] = [rule for rule in rules if rule != entry.name]
        return settings_text(data, text)
    groups = data.get("hooks", {}).get(entry.event, [])
    kept = []
    for group in groups:
        if isinstance(group, dict) and str(group.get("matcher") or "") == entry.matcher:
            hooks = [h for h in group.get("hooks", []) if not (isinstance(h, dict) and h["command"] == entry.command)]
            if not hooks:
                continue
            group = {**group, "hooks": hooks}
        kept.append(group)
    data["hooks"][entry.event] = kept
    return settings_text(data, text)


def remove(copy: Path, entry: Entry) -> None:
    """Take `entry` out of its settings file in `copy` (a copy of the audited directory: never the directory itself)."""
    path = copy / entry.file
    path.write_text(without(path.read_text(encoding="utf-8"), entry), encoding="utf-8")


def flips(before: Sequence[Record], after: Sequence[Record]) -> list[tuple[Record, Record]]:
    """The cells of `after` that differ from the same item in `before` (an item played in one alone is no flip)."""
    was = {key(r): r for r in before}
    return [(was[key(r)], r) for r in after if key(r) in was and was[key(r)].cell != r.cell]


def run(directory: Path, play: Play, say: Callable[[str], None] = print) -> tuple[list[Record], list[Removal]]:
    """The baseline, and each entry of `directory`'s settings removed in turn (coverage flags from the baseline)."""
    from .coverage import judge

    listed = entries(directory)
    if not listed:
        return [], []
    say(f"coverage: the audit again without any change (the baseline), then {len(listed)} time(s), each hook and "
        "rule of the project settings removed in turn")  # fmt: skip
    baseline = play(None, "baseline")
    judge(listed, baseline, directory)
    removals = []
    for number, entry in enumerate(listed, start=1):
        after = play(entry, f"{number}-{entry.kind}")
        removal = Removal(entry, played=sum(1 for r in after if r.cell != "not offered"), flips=flips(baseline, after))
        removals.append(removal)
        say(f"  {number}/{len(listed)} without {_name(entry)}: {len(removal.flips)} cell(s) flip")
    return baseline, removals


def lines(removals: Sequence[Removal]) -> list[str]:
    """The report, for the terminal, summary.md and the page."""
    if not removals:
        return ["coverage: the directory's project settings hold no hook or rule to remove"]
    flipping = sum(bool(r.flips) for r in removals)
    return [
        f"each hook and rule removed in turn: {flipping} of {len(removals)} change(s) a cell of the audit",
        *(f"  {'~' if r.flips else '='} {r.line}" for r in removals),
    ]


def write(removals: Sequence[Removal], out: Path) -> list[Path]:
    """audit.json's `coverage.removed`, and the report's section in summary.md and audit.html."""
    written = []
    audit_json = out / "audit.json"
    if audit_json.is_file():
        data = json.loads(audit_json.read_text(encoding="utf-8"))
        data.setdefault("coverage", {})
        data["coverage"] = {**(data["coverage"] or {}), "removed": [r.as_json() for r in removals]}
        write_atomically(audit_json, json.dumps(data, indent=1, ensure_ascii=False).encode())
        written.append(audit_json)
    return written + append_section(out, "Each hook and rule removed in turn", lines(removals))
