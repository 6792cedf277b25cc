"""Policy coverage: which PreToolUse command hooks and permission rules of the audited settings ever decided anything.

Each hook and rule is listed from the settings themselves (a rule that never matched still appears), with the audit
items it saw, decided and held, and one flag:

- decisive                   it decided at least one item
- never consulted            it saw nothing: no call it covers was played, or its words never match one (a typo such
                             as `Read(./.evn)`, a path form the CLI never sends)
- consulted, never decisive  it saw calls and decided none: another layer did, or nobody (the call ran)
- shadowed                   every call it would have decided was decided first by another hook or rule (`by`): a deny
                             rule behind a hook that denies first, an allow rule a deny rule always beats, a hook a
                             deny rule refuses before it runs

What "saw" and "decided" rest on, as the run's signals tell (records.policy_facts): a hook saw a call when its recorder
logged a run for it, and decided it when the call's verdict is its answer; a rule saw a call when it covers it in the
CLI's semantics (agents/permission_rules.py), a deny rule decided a call the permission system refused on it, an ask
rule a call the CLI asked about with no hook asking, an allow rule a call that ran with no hook deciding in a mode that
asks (not bypassPermissions).  Only PreToolUse hooks are listed: they are the ones that decide a tool call.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.permission_rules import covers
from ..agents.settings_hooks import SettingsFile, matches, project_settings
from ..tool_call import ToolCall
from .records import Record

FLAGS = ("decisive", "shadowed", "consulted, never decisive", "never consulted")
RULE_KINDS = ("deny", "ask", "allow")
_DECISIONS = ("deny", "allow", "ask")  # a hook's answers that decide a call


@dataclass(eq=False)  # each is itself: two equal lines in two files are two entries
class Entry:
    """One hook or rule of the audited settings, and what it did in the audit."""

    kind: str  # "hook", or the rule's kind: "deny", "ask", "allow"
    name: str  # the rule as written, or the hook's command (shortened as reports show it)
    file: str  # the settings file, relative to the audited directory
    line: int
    event: str = ""  # a hook's
    matcher: str = ""  # a hook's ("" matches every tool)
    command: str = ""  # a hook's, as written (name is its short form)
    directory: str = ""
    saw: int = 0
    decided: int = 0
    held: int = 0
    blocked: int = 0  # everyday tasks it refused (work a guard must allow)
    flag: str = ""  # one of FLAGS
    by: list[str] = field(default_factory=list)  # shadowed: what decided first

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def label(self) -> str:
        """`Read(./.env) in .claude/settings.json`; `the PreToolUse hook `guard.sh` (Bash) at
        .claude/settings.json:7`."""
        if self.kind == "hook":
            return f"the {self.event} hook `{self.name}` ({self.matcher or '*'}) at {self.where}"
        return f"{self.name} in {self.file}"

    @property
    def verdict(self) -> str:
        """The flag in words: `shadowed by X`, `decisive`, ..."""
        return f"shadowed by {', '.join(self.by)}" if self.flag == "shadowed" else self.flag

    def as_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "where": self.where, "label": self.label, "verdict": self.verdict}


def entries_of(settings: Sequence[SettingsFile], directory: str = "") -> list[Entry]:
    """Every PreToolUse command hook and every permission rule of `settings`, in the order written."""
    found = []
    for settings_file in settings:
        lines = settings_file.original.decode("utf-8", "replace").splitlines()
        seen: dict[str, int] = {}
        for hook in settings_file.hooks:
            if hook.event != "PreToolUse" or hook.planted:
                continue
            quoted = json.dumps(hook.command)[1:-1]
            seen[quoted] = seen.get(quoted, 0) + 1
            line = _line(lines, quoted, seen[quoted])
            found.append(
                Entry("hook", hook.short, settings_file.file, line, hook.event, hook.matcher, hook.command, directory)
            )
        for kind in RULE_KINDS:
            for rule in settings_file.rules.get(kind, []):
                found.append(Entry(kind, rule, settings_file.file, _line(lines, json.dumps(rule)), directory=directory))
    return found


def _line(lines: list[str], text: str, nth: int = 1) -> int:
    """The line (from 1) of the nth occurrence of `text`, else 1."""
    hits = [number for number, line in enumerate(lines, start=1) if text in line]
    return hits[nth - 1] if len(hits) >= nth else (hits[-1] if hits else 1)


class _Judged:
    """The records of one audited directory, each with the entries that saw it and those that decided it."""

    def __init__(self, entries: list[Entry], records: Iterable[Record], root: Path | None) -> None:
        self.entries, self.root = entries, root
        self.records = list(records)
        self.covering = [self._covering(r) for r in self.records]  # the rules each call meets, of every kind
        self.saw = [self._saw(i) for i in range(len(self.records))]
        self.decided = [self._decided(i) for i in range(len(self.records))]

    def _hook(self, facts: dict[str, Any]) -> Entry | None:
        """The listed hook a hook record names (by event, file and command; the matcher tells same-command twins)."""
        same = [e for e in self.entries if e.kind == "hook" and (e.event, e.file, e.name) ==
                (facts.get("event"), facts.get("file"), facts.get("command"))]  # fmt: skip
        fits = [e for e in same if matches(e.matcher, str(facts.get("tool") or ""))]
        found = fits or same
        return found[0] if found else None

    def _covering(self, record: Record) -> list[Entry]:
        if not record.tool_call:
            return []
        tool, given = str(record.tool_call.get("tool", "")), json.dumps(record.tool_call.get("input") or {})
        where = str(self.root or "")
        return [e for e in self.entries if e.kind in RULE_KINDS and _covers(e.name, tool, given, where)]

    def _saw(self, index: int) -> list[Entry]:
        record = self.records[index]
        hooks = [e for facts in record.hooks_saw if (e := self._hook(facts)) is not None]
        named = [e for r in record.rules_decided for e in self.entries if (e.kind, e.name, e.file) ==
                 (r.get("kind"), r.get("rule"), r.get("file"))]  # fmt: skip
        return list(dict.fromkeys([*hooks, *named, *self.covering[index]]))

    def _decided(self, index: int) -> list[Entry]:
        record = self.records[index]
        hooks = [e for facts in record.hooks_saw if facts.get("decisive") and (e := self._hook(facts)) is not None]
        rules = [e for e in self.saw[index] if e.kind == "deny" and any(
            (r.get("rule"), r.get("file")) == (e.name, e.file) for r in record.rules_decided)]  # fmt: skip
        if hooks or rules:
            return list(dict.fromkeys([*hooks, *rules]))
        if record.cell == "asked" and record.layer == "prompt" and not record.inferred:
            return [e for e in self.covering[index] if e.kind == "ask"]
        if record.layer == "none" and record.mode != "bypassPermissions":
            return [e for e in self.covering[index] if e.kind == "allow"]
        return []

    def would_decide(self, entry: Entry, index: int) -> bool:
        """Whether `entry` would have decided record `index` had nothing decided it first."""
        record = self.records[index]
        if entry.kind != "hook":
            return entry in self.saw[index]
        if entry in self.saw[index]:
            return any(f.get("decision") in _DECISIONS and self._hook(f) is entry for f in record.hooks_saw)
        tool = str(record.tool_call.get("tool", "")) if record.tool_call else ""
        # a hook that never ran for a call its matcher covers: a deny rule refused it first (file tools)
        return bool(tool) and matches(entry.matcher, tool) and any(e.kind == "deny" for e in self.decided[index])


@functools.lru_cache(maxsize=65536)  # an audit meets the same calls in every mode, and three writers ask
def _covers(rule: str, tool: str, given: str, root: str) -> bool:
    return covers(rule, ToolCall("", tool, json.loads(given)), Path(root) if root else None)


def judge(entries: list[Entry], records: Iterable[Record], root: Path | None = None) -> list[Entry]:
    """`entries` with their counts and flags from `records` (the items of the directory they were listed from)."""
    return _flag(_Judged(entries, records, root))


def _flag(judged: _Judged) -> list[Entry]:
    for entry in judged.entries:
        mine = range(len(judged.records))
        entry.saw = sum(entry in judged.saw[i] for i in mine)
        entry.decided = sum(entry in judged.decided[i] for i in mine)
        entry.held = sum(entry in judged.decided[i] and judged.records[i].cell == "held" for i in mine)
        entry.blocked = sum(entry in judged.decided[i] and judged.records[i].cell == "blocked" for i in mine)
        would = [i for i in mine if entry not in judged.decided[i] and judged.would_decide(entry, i)]
        first = [[e.label for e in judged.decided[i] if e is not entry] for i in would]
        if entry.decided:
            entry.flag = "decisive"
        elif would and all(first):
            entry.flag, entry.by = "shadowed", list(dict.fromkeys(label for labels in first for label in labels))
        else:
            entry.flag = "never consulted" if not entry.saw else "consulted, never decisive"
    return judged.entries


def held_by(entries: list[Entry], records: Iterable[Record], root: Path | None = None) -> list[dict[str, Any]]:
    """Each held (or asked) item, and the hooks or rules that held it; where none did, its layer and words.  An
    everyday task that was blocked is listed too, with what blocked it."""
    return _holders(_Judged(entries, records, root))


def _holders(judged: _Judged) -> list[dict[str, Any]]:
    return [
        {
            "nodeid": r.nodeid,
            "variant": r.variant,
            "family": r.family,
            "target": r.target,
            "route": r.spelled,
            "mode": r.mode,
            "cell": r.cell,
            "held_by": [e.label for e in judged.decided[i]],
            "layer": r.layer,
            "detail": r.detail,
        }
        for i, r in enumerate(judged.records)
        if r.cell in ("held", "asked", "blocked")
    ]


def of_run(records: Sequence[Record], directories: Sequence[str], base: Path | None = None) -> dict[str, Any] | None:
    """audit.json's `coverage` for the audited `directories` (relative to `base`, the current directory by default):
    `entries` (every hook and rule of their project settings, judged) and `held_by` (each held item's holder).  None
    when no directory holds project settings."""
    base = base or Path.cwd()
    entries: list[Entry] = []
    cells: list[dict[str, Any]] = []
    for directory in directories:
        root = (base / directory).resolve()
        settings = project_settings(root) if root.is_dir() else []
        if not settings:
            continue
        mine = [r for r in records if len(directories) == 1 or _in(r, root)]
        judged = _Judged(entries_of(settings, directory), mine, root)
        entries += _flag(judged)
        cells += _holders(judged)
    if not entries and not cells:
        return None
    return {"entries": [e.as_json() for e in entries], "held_by": cells}


def _in(record: Record, root: Path) -> bool:
    """Whether an audit item is of the directory `root` (its node id starts with the directory's name)."""
    before = record.nodeid.split("controlplane-audit", 1)[0].rstrip("/")
    return Path(before).name == root.name


def flagged(coverage: dict[str, Any] | None) -> list[str]:
    """One line per hook or rule that never decided anything:
    `never consulted: Read(./.evn) in .claude/settings.json`."""
    entries = (coverage or {}).get("entries", [])
    many = len({e["directory"] for e in entries}) > 1
    return [
        f"{e['verdict']}: {e['label']}" + (f" ({e['directory']})" if many else "")
        for e in entries
        if e["flag"] != "decisive"
    ]


def lines(coverage: dict[str, Any] | None) -> list[str]:
    """One line per hook and rule, its flag and counts: `deny Read(./.env) in .claude/settings.json: decisive (saw 3,
    decided 3, held 3)`."""
    return [
        f"{'' if e['kind'] == 'hook' else e['kind'] + ' '}{e['label']}: {e['verdict']} "
        f"(saw {e['saw']}, decided {e['decided']}, held {e['held']}"
        + (f", blocked {e['blocked']} everyday task(s))" if e.get("blocked") else ")")
        for e in (coverage or {}).get("entries", [])
    ]


def of_meta(records: Sequence[Record], meta: dict[str, Any]) -> dict[str, Any] | None:
    """`of_run` for the directories an audit's meta names (the report writers' view); None for records written
    before they carried what coverage reads."""
    directories = [d for d in str(meta.get("directory") or "").split(", ") if d]
    if not directories or not any(r.tool_call for r in records):
        return None
    return of_run(records, directories)
