"""The proof of `controlplane audit DIR --fix` (catalogue and judging: fix.py), and what it writes: the terminal lines,
a section of summary.md, audit.json's `fix`, `fix.patch` and a regression module pinned to the fixed verdicts.

`prove(records, directory, play)` runs the rounds: propose for the holes still open, prove each change on its own
against one play without any change (the baseline), and for the holes of a rejected or unproven change try the next
catalogue entry; then play every proven change together, the play the patch and the regression module rest on.
`play(changes, selection, name)` is the caller's: it plays `selection` on a copy of the directory with `changes`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.settings_hooks import project_settings
from ..atomic import write_atomically
from ..bypass.everyday import allowed_domains
from . import fix, sarif
from .fix import Change, Proposal, Selection
from .records import Record
from .reports import append_section

Play = Callable[[Sequence[Change], Selection, str], list[Record]]
ROUNDS = 3  # a hole's catalogue has at most three entries: a matcher, a deny rule, the sandbox


@dataclass
class Proof:
    """What `--fix` found: every proposal judged, the proven changes, and the play of them together."""

    holes: list[Record]
    proposals: list[Proposal] = field(default_factory=list)
    selection: Selection | None = None
    before: list[Record] = field(default_factory=list)
    after: list[Record] = field(default_factory=list)  # every proven change together
    together: Proposal | None = None  # the proven changes judged together, on every hole

    @property
    def proven(self) -> list[Change]:
        return [p.change for p in self.proposals if p.verdict == "proven"]

    def totals(self, records: Sequence[Record]) -> str:
        """`2 holes, 3 of 15 everyday tasks blocked` of one play."""
        attacks = [r for r in records if not r.everyday]
        work = [r for r in records if r.everyday and r.cell in ("done", "blocked")]
        blocked = sum(r.cell == "blocked" for r in work)
        held = sum(r.cell in fix.HELD for r in attacks)
        return (
            f"{sum(r.cell == 'bypassed' for r in attacks)} hole(s), {held} of {len(attacks)} attack(s) held; "
            f"{blocked} of {len(work)} everyday task(s) blocked"
        )


def options_of(holes: Sequence[Record], directory: Path) -> dict[int, list[Change]]:
    """Each hole's catalogue (by index), from the settings of `directory`."""
    settings = project_settings(directory)
    hooks = [(h.event, h.matcher) for s in settings for h in s.hooks if not h.planted]
    deny = [rule for s in settings for rule in s.rules.get("deny", [])]
    domains = allowed_domains([{"permissions": {"allow": s.rules.get("allow", [])}, "sandbox": s.sandbox}
                               for s in settings])  # fmt: skip
    return {i: fix.catalogue(hole, hooks, deny, domains) for i, hole in enumerate(holes)}


def prove(records: Sequence[Record], directory: Path, play: Play, say: Callable[[str], None] = print) -> Proof:
    """Propose, prove, and propose again for what is still open (see the module's docstring)."""
    proof = Proof(fix.holes(records))
    options = options_of(proof.holes, directory)
    columns = {r.mode for r in records}
    proof.selection = Selection.of([h for i, h in enumerate(proof.holes) if options[i]], columns)
    if not any(options.values()):
        return proof
    say(f"fix: the play without a change (the baseline): {' '.join(proof.selection.args())}")
    proof.before = play([], proof.selection, "baseline")
    closed: set[tuple[str, ...]] = set()
    for _ in range(ROUNDS):
        open_ = [h for h in proof.holes if fix.key(h) not in closed]
        found = {i: options[proof.holes.index(h)] for i, h in enumerate(open_)}
        round_ = fix.propose(open_, found, tried=[p.change for p in proof.proposals])
        for proposal in round_:
            _prove_one(proposal, proof, play, say)
            closed |= {fix.key(r) for r in proposal.closed} if proposal.verdict == "proven" else set()
        if not round_:
            break
    if proof.proven:
        say(f"fix: every proven change together: {'; '.join(c.words for c in proof.proven)}")
        proof.after = play(proof.proven, proof.selection, "together")
        together = Proposal(Change("together"), proof.holes)
        proof.together = fix.judge(together, proof.before, proof.after)
    return proof


def _prove_one(proposal: Proposal, proof: Proof, play: Play, say: Callable[[str], None]) -> None:
    """Play one change on its holes' targets and route classes, and judge it against the baseline."""
    assert proof.selection is not None
    selection = Selection.of(proposal.holes, proof.selection.columns)
    name = f"{len(proof.proposals) + 1}-{proposal.change.kind}"
    say(f"fix: proving {proposal.change.words} ({len(proposal.holes)} hole(s)): {' '.join(selection.args())}")
    after = play([proposal.change], selection, name)
    before = [r for r in proof.before if selection.holds(r)]
    proof.proposals.append(fix.judge(proposal, before, after))
    say(f"  {proposal.line}")


def lines(proof: Proof) -> list[str]:
    """The report, for the terminal and summary.md."""
    if not proof.holes:
        return ["fix: no hole in the configuration as it is: nothing to fix"]
    found = [f"fix: {len(proof.holes)} hole(s) in the configuration as it is; {len(proof.proposals)} change(s) tried:"]
    found += [f"  {'✓' if p.verdict == 'proven' else '✗'} {p.line}" for p in proof.proposals]
    uncovered = [h for h in proof.holes if not any(fix.key(h) == fix.key(r) for p in proof.proposals for r in p.holes)]
    if uncovered:
        found.append(f"  no catalogue entry for {len(uncovered)} hole(s): {_uncovered(uncovered)}")
    if proof.together is not None:
        t = proof.together
        found += [
            f"together ({len(proof.proven)} change(s)): closes {len(t.closed)} of {len(proof.holes)} hole(s), opens "
            f"{len(t.opened)}, blocks {len(t.blocked)} everyday task(s), on {t.played} variant(s)",
            f"  before: {proof.totals(proof.before)}",
            f"  after:  {proof.totals(proof.after)}",
        ]
    else:
        found.append("no change proven: no fix.patch written")
    return found


def _uncovered(holes: Sequence[Record]) -> str:
    shown = dict.fromkeys(f"{h.family} {h.target} by {h.spelled} ({h.route_class})" for h in holes)
    return "; ".join(list(shown)[:6]) + (f" and {len(shown) - 6} more" if len(shown) > 6 else "")


def as_json(proof: Proof, patch: str) -> dict[str, Any]:
    """audit.json's `fix`."""
    together = proof.together.as_json() if proof.together else None
    return {
        "holes": len(proof.holes),
        "selection": proof.selection.args() if proof.selection else [],
        "proposals": [p.as_json() for p in proof.proposals],
        "proven": [c.words for c in proof.proven],
        "together": together,
        "before": proof.totals(proof.before),
        "after": proof.totals(proof.after) if proof.after else "",
        "patch": patch,
    }


def write(proof: Proof, directory: Path, out: Path, meta: dict[str, Any]) -> list[Path]:
    """fix.patch and the regression module of the proven changes' play; the `fix` key of audit.json; a section of
    summary.md.  Returns the files written."""
    from . import regression

    text = fix.patch(directory, proof.proven) if proof.proven and proof.together else ""
    written = []
    if text:
        write_atomically(out / "fix.patch", text.encode())
        module = out / "test_fix_regression.py"
        fixed = {**meta, "command": f"{meta.get('command', 'controlplane audit')} --fix, after `git apply fix.patch`"}
        written += [out / "fix.patch", regression.write(proof.after, module, meta=fixed,
                                                        agents=[f"settings {directory.resolve()}"])]  # fmt: skip
    audit_json = out / "audit.json"
    if audit_json.is_file():
        data = json.loads(audit_json.read_text(encoding="utf-8"))
        data["fix"] = as_json(proof, text)
        write_atomically(audit_json, json.dumps(data, indent=1, ensure_ascii=False).encode())
        written.append(audit_json)
    if text and proof.together is not None:
        before = (directory / fix.SETTINGS).read_text(encoding="utf-8") if (directory / fix.SETTINGS).is_file() else ""
        after = fix.changed_settings(directory, proof.proven)
        words = "; ".join(c.words for c in proof.proven)
        if sarif.add_fix(out / "audit.sarif", proof.together.closed, words=words, uri=fix.SETTINGS, old=before,
                         new=after):  # fmt: skip
            written.append(out / "audit.sarif")
    return written + append_section(out, "The fix the audit proves", lines(proof))
