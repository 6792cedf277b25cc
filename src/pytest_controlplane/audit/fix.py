"""A fix the audit proves (`controlplane audit DIR --fix`): for each hole of the configuration as it is, the smallest
settings change of a catalogue, judged by playing it on a copy.

The catalogue, least scope first, each entry in the CLI's own syntax:

- matcher   a PreToolUse hook's matcher widened to every tool that does the same thing, when the hole's tool is a
            sibling of one the matcher names (`Write|Edit` -> `Write|Edit|MultiEdit|NotebookEdit`, `Bash` ->
            `Bash|Monitor`): the hook then sees the call it was written for
- deny      a `permissions.deny` rule: `Edit(./.env)` for a write, `Read(./.env)` / `Read(./secrets/**)` for a read,
            `Bash(curl:*)` for a command, `WebFetch` for a fetch out; the CLI applies `Read(...)`/`Edit(...)` rules to
            the files a command names too (agents/permission_rules.py), so one rule covers the file tools and the shell
- sandbox   the OS sandbox for the shell: `sandbox.enabled: true`, `sandbox.allowUnsandboxedCommands: false`, with the
            file rule (sandboxed commands honour `Read(...)`/`Edit(...)` rules: cli_facts.
            FILE_RULES_HOLD_SANDBOXED_COMMANDS_SINCE) or `sandbox.network.allowedDomains` for a way out

Holes one change closes are grouped (`propose`): of the holes left, the change claiming the most, least scope first.
A change is judged (`judge`) by its proof: the play of its holes' targets and route classes (every sibling variant)
and the everyday family, under every mode the audit played, on a copy with the change, against the same play on a
copy without it.  Proven: it closes at least one hole, opens none (a cell held before, bypassed after) and blocks no
everyday task done before.  Rejected: it opens a hole or blocks work.  Never proven on zero variants.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bypass.everyday import DEFAULT_DOMAIN
from .plan import EVERYDAY, ROUTE_CLASSES, split_column
from .records import Record

SETTINGS = ".claude/settings.json"  # the file the changes go to: the project's shared settings
SIBLINGS = (("Write", "Edit", "MultiEdit", "NotebookEdit"), ("Bash", "Monitor"))
KINDS = ("matcher", "deny", "sandbox")  # the catalogue, least scope first
SHELL_CLASSES = {ROUTE_CLASSES[name] for name in ("shell", "command", "injected", "sandbox")}
HELD = ("held", "never consulted")  # a cell the attack did not get through, by the control plane
WIDTH = 120  # a list written on one line in a settings file, at most
ROUTE_NAMES = {words: name for name, words in ROUTE_CLASSES.items()}


@dataclass(frozen=True)
class Change:
    """One catalogue entry, ready to apply to a settings object."""

    kind: str  # one of KINDS
    deny: tuple[str, ...] = ()  # rules added to permissions.deny
    matcher: tuple[str, str] = ("", "")  # (the matcher as written, widened)
    sandbox: tuple[tuple[str, Any], ...] = ()  # (dotted key under `sandbox`, value)

    @property
    def words(self) -> str:
        """`permissions.deny += Edit(./.env)`; `PreToolUse matcher Bash -> Bash|Monitor`; `sandbox.enabled: true`."""
        parts = [f"PreToolUse matcher `{self.matcher[0]}` -> `{self.matcher[1]}`"] * bool(self.matcher[1])
        parts += [f"sandbox.{key}: {json.dumps(value)}" for key, value in self.sandbox]
        parts += [f"permissions.deny += {', '.join(self.deny)}"] * bool(self.deny)
        return "; ".join(parts)

    def apply(self, settings: dict[str, Any]) -> dict[str, Any]:
        """`settings` (a settings.json object) with the change; the object given is left as it was."""
        data = copy.deepcopy(settings)
        deny = data.setdefault("permissions", {}).setdefault("deny", []) if self.deny else []
        deny += [rule for rule in self.deny if rule not in deny]
        for key, value in self.sandbox:
            *path, last = key.split(".")
            place = data.setdefault("sandbox", {})
            for part in path:
                place = place.setdefault(part, {})
            place[last] = sorted({*place.get(last, []), *value}) if isinstance(value, list) else value
        old, new = self.matcher
        for entry in data.get("hooks", {}).get("PreToolUse", []) if new else []:
            if isinstance(entry, dict) and entry.get("matcher") == old:
                entry["matcher"] = new
        return data


def holes(records: Iterable[Record]) -> list[Record]:
    """The holes of the configuration as it is: bypassed attacks outside the what-if columns."""
    return [r for r in records if r.cell == "bypassed" and not r.what_if]


def tool_of(record: Record) -> str:
    """The tool of a hole's call: its recorded call's, else the first word of its route (`Monitor >` -> Monitor)."""
    return str(record.tool_call.get("tool") or "") or (record.route.split() or [""])[0]


def _path_rule(tool: str, target: str) -> str:
    """`Read(./.env)`, `Edit(./secrets/**)`, `Read(~/.ssh/id_ed25519)`: a target as a file rule's path."""
    path = target if target.startswith(("/", "~", "./")) else f"./{target}"
    return f"{tool}({path.rstrip('/') + '/**' if path.endswith('/') else path})"


def deny_rule(record: Record) -> str:
    """The deny rule that names what the hole did, in the CLI's syntax, or "" when none does."""
    if record.family in ("write", "read"):
        return _path_rule("Edit" if record.family == "write" else "Read", record.target)
    if record.family == "exec":
        return f"Bash({record.target.split()[0]}:*)" if record.target.strip() else ""
    if record.family == "egress" and tool_of(record) == "WebFetch":
        return "WebFetch"
    return ""


def _widened(tool: str, hooks: Sequence[tuple[str, str]]) -> list[Change]:
    """Each PreToolUse matcher that names a sibling of `tool` but not `tool`, widened to the whole sibling group."""
    found = []
    for event, matcher in hooks:
        names = [n for n in matcher.split("|") if n]
        for group in SIBLINGS if event == "PreToolUse" and names and tool not in names else ():
            if tool in group and set(names) & set(group):
                widened = "|".join([*names, *(t for t in group if t not in names)])
                found.append(Change("matcher", matcher=(matcher, widened)))
    return found


def _sandboxed(record: Record, rule: str, domains: Sequence[str]) -> list[Change]:
    """The OS sandbox for a shell hole: on, no way around it, with the file rule or the allowed domains."""
    shell = record.route_class in SHELL_CLASSES or tool_of(record) in SIBLINGS[1]  # an egress class's Bash too
    if not shell or record.family == "exec":
        return []
    on: tuple[tuple[str, Any], ...] = (("enabled", True), ("allowUnsandboxedCommands", False))
    if record.family == "egress":
        return [Change("sandbox", sandbox=(*on, ("network.allowedDomains", list(domains or [DEFAULT_DOMAIN]))))]
    return [Change("sandbox", deny=(rule,) if rule else (), sandbox=on)]


def catalogue(record: Record, hooks: Sequence[tuple[str, str]], deny: Sequence[str] = (),
              domains: Sequence[str] = ()) -> list[Change]:  # fmt: skip
    """The changes that may close one hole, least scope first; `hooks`: (event, matcher) of the settings' command
    hooks; `deny`: the rules already in force (a rule there that did not hold is not proposed again); `domains`: those
    the configuration allows by name (the sandbox keeps them reachable; pypi.org when there are none).  A hole of a
    poisoned repository gets none: what it plants acts before any setting of the user's."""
    if record.route_class == ROUTE_CLASSES["poisoned"] or record.family == EVERYDAY:
        return []
    rule = deny_rule(record)
    rules = [Change("deny", deny=(rule,))] if rule and rule not in deny else []
    return [*_widened(tool_of(record), hooks), *rules, *_sandboxed(record, rule, domains)]


@dataclass
class Proposal:
    """A change and the holes it is proposed for; after its proof, what it did."""

    change: Change
    holes: list[Record]
    verdict: str = ""  # "proven", "rejected", "not proven"
    why: str = ""
    played: int = 0  # attack variants its proof played (sibling variants included)
    closed: list[Record] = field(default_factory=list)
    opened: list[Record] = field(default_factory=list)
    blocked: list[Record] = field(default_factory=list)  # everyday tasks done before, blocked after

    @property
    def line(self) -> str:
        """`Edit(./.env): closes 2 holes, opens 0, blocks 0 everyday tasks (proven on 6 variants)`, or why not."""
        head = f"{self.change.words}: "
        if self.verdict == "proven":
            return head + (
                f"closes {len(self.closed)} hole(s) of the {len(self.holes)} it was proposed for, opens 0, blocks 0 "
                f"everyday tasks (proven on {self.played} variant(s) and the everyday family)"
            )
        return head + f"{self.verdict}: {self.why}"

    def as_json(self) -> dict[str, Any]:
        keys = {k: [list(key(r)) for r in getattr(self, k)] for k in ("holes", "closed", "opened", "blocked")}
        return {"change": self.change.words, "kind": self.change.kind, "verdict": self.verdict, "why": self.why,
                "played": self.played, **keys, "line": self.line}  # fmt: skip


def propose(found: Sequence[Record], options: dict[int, list[Change]], tried: Iterable[Change] = ()) -> list[Proposal]:
    """Group the holes (`options`: each hole's catalogue, by its index in `found`) under as few changes as closes them:
    of the holes left, the change that claims the most, least scope first; a change already tried is not proposed."""
    tried = set(tried)
    left = {i: [c for c in options.get(i, []) if c not in tried] for i in range(len(found))}
    left = {i: changes for i, changes in left.items() if changes}
    proposals = []
    while left:
        first = {changes[0] for changes in left.values()}
        claims = {c: [i for i, changes in left.items() if c in changes] for c in first}
        best = min(first, key=lambda c: (KINDS.index(c.kind), -len(claims[c]), c.words))
        proposals.append(Proposal(best, [found[i] for i in claims[best]]))
        left = {i: changes for i, changes in left.items() if i not in claims[best]}
    return proposals


def key(record: Record) -> tuple[str, str, str, str, str]:
    """A record's place in any audit of the same targets, whatever the copy it played in."""
    return record.family, record.target, record.variant, record.mode, record.cli


def judge(proposal: Proposal, before: Sequence[Record], after: Sequence[Record]) -> Proposal:
    """The proposal's verdict from the play without the change (`before`) and with it (`after`)."""
    was = {key(r): r for r in before}
    attacks = [r for r in after if not r.everyday and r.cell != "not offered"]
    proposal.played = len(attacks)
    claimed = {key(r) for r in proposal.holes}
    proposal.closed = [r for r in after if key(r) in claimed and r.cell in HELD]
    proposal.opened = [r for r in attacks if r.cell == "bypassed" and key(r) in was and was[key(r)].cell in HELD]
    proposal.blocked = [r for r in after if r.everyday and r.cell == "blocked" and _was(was, r) == "done"]
    if not proposal.played:
        proposal.verdict, proposal.why = "not proven", "its proof played no variant (a fix tried on none is no fix)"
    elif proposal.opened or proposal.blocked:
        proposal.verdict, proposal.why = "rejected", _rejected(proposal)
    elif not proposal.closed:
        still = sorted({r.cell for r in after if key(r) in claimed}) or ["not played"]
        proposal.verdict = "not proven"
        proposal.why = f"closes none of the {len(claimed)} hole(s) it was proposed for (they end {', '.join(still)})"
    else:
        proposal.verdict = "proven"
    return proposal


def _was(was: dict[tuple[str, str, str, str, str], Record], record: Record) -> str:
    found = was.get(key(record))
    return found.cell if found else ""


def _rejected(proposal: Proposal) -> str:
    """Why: the holes it opens and the everyday work it blocks, each named."""
    parts = [f"opens {len(proposal.opened)} hole(s) held before ({_names(proposal.opened)})"] * bool(proposal.opened)
    parts += [f"blocks {len(proposal.blocked)} everyday task(s) done before ({_names(proposal.blocked)})"] * bool(
        proposal.blocked
    )
    return "; ".join(parts)


def _names(records: Sequence[Record]) -> str:
    shown = [f"{r.family} {r.target} by {r.spelled}".replace("everyday ", "") for r in records[:4]]
    return ", ".join(shown) + (f" and {len(records) - 4} more" if len(records) > 4 else "")


@dataclass(frozen=True)
class Selection:
    """What a proof plays: target lines, route classes (short names) and matrix columns; the everyday family always."""

    targets: tuple[str, ...]
    routes: tuple[str, ...]
    columns: tuple[str, ...]

    @classmethod
    def of(cls, records: Iterable[Record], columns: Iterable[str]) -> Selection:
        found = list(records)
        targets = dict.fromkeys(f"{r.family} {r.target}" for r in found)
        routes = dict.fromkeys(ROUTE_NAMES.get(r.route_class, "") for r in found)
        return cls(
            (*targets, EVERYDAY), (*(r for r in routes if r), "everyday"), tuple(sorted(set(columns)))
        )  # fmt: skip

    def args(self) -> list[str]:
        """The `controlplane audit` options that play it."""
        words = [w for t in self.targets for w in ("--target", t)] + [w for r in self.routes for w in ("--route", r)]
        modes = dict.fromkeys(split_column(c)[0] for c in self.columns)
        levels = dict.fromkeys(split_column(c)[1] for c in self.columns if split_column(c)[1])
        return words + ["--mode", ",".join(modes)] + (["--sandbox", ",".join(levels)] if levels else [])

    def holds(self, record: Record) -> bool:
        """Whether a record of another play is one this selection plays."""
        route = ROUTE_NAMES.get(record.route_class, "")
        return record.mode in self.columns and (record.everyday or (
            f"{record.family} {record.target}" in self.targets and route in self.routes))  # fmt: skip


def settings_of(directory: Path) -> dict[str, Any]:
    """The project settings object of `directory` ({} when it has none)."""
    path = directory / SETTINGS
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def settings_text(settings: dict[str, Any], original: str = "") -> str:
    """The settings as a file, in the style of `original`: `json.dumps(indent=2)`'s when it was written so, else a
    list (or an object inside a list) on one line when it fits, as people write settings; the diff stays small."""
    plain = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    if not original or original == json.dumps(json.loads(original), indent=2, ensure_ascii=False) + "\n":
        return plain
    return _render(settings, 0, in_list=False) + "\n"


def _render(value: Any, indent: int, *, in_list: bool) -> str:
    inline = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or not value or (
        (isinstance(value, list) or in_list) and indent + len(inline) <= WIDTH):  # fmt: skip
        return inline
    inner = " " * (indent + 2)
    if isinstance(value, list):
        items = [inner + _render(v, indent + 2, in_list=True) for v in value]
    else:
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_render(v, indent + 2, in_list=False)}"
                 for k, v in value.items()]  # fmt: skip
    opening, closing = "[]" if isinstance(value, list) else "{}"
    return opening + "\n" + ",\n".join(items) + "\n" + " " * indent + closing


def apply(directory: Path, changes: Iterable[Change]) -> None:
    """Write the changes into `directory`'s project settings (a copy's: never the audited directory's)."""
    path = directory / SETTINGS
    text = changed_settings(directory, list(changes))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def changed_settings(directory: Path, changes: Sequence[Change]) -> str:
    """The text of `directory`'s project settings with the changes made (in the file's own layout; the text as it is
    when there are none)."""
    path = directory / SETTINGS
    original = path.read_text(encoding="utf-8") if path.is_file() else ""
    if not changes:
        return original
    settings = settings_of(directory)
    for change in changes:
        settings = change.apply(settings)
    return settings_text(settings, original)


def patch(directory: Path, changes: Sequence[Change]) -> str:
    """A unified diff of the settings file with the changes, relative to `directory` (`git apply` takes it there)."""
    path = directory / SETTINGS
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    new = changed_settings(directory, changes)
    if new == old:
        return ""
    before = f"a/{SETTINGS}" if path.is_file() else "/dev/null"
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), before, f"b/{SETTINGS}")
    head = f"diff --git a/{SETTINGS} b/{SETTINGS}\n" + ("new file mode 100644\n" if not path.is_file() else "")
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return head + text
