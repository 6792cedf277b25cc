"""Is every prompt cell of an audit true?  Compares the audit played with nobody at the approval prompt (the default)
with the same audit played with a yes (`--approval allow`), record by record:

- a cell held only by the prompt (`asked`) must get through with a yes;
- a cell held by a guard, a rule, the mode, the sandbox or the CLI (behind the prompt or not) must stay held, by the
  same layer.

    controlplane audit DIR --out deny
    controlplane audit DIR --approval allow --out allow
    python tools/approval_consistency.py deny/audit.json allow/audit.json

Prints the per-layer totals of the first audit, how many verdicts were inferred from the CLI's words (each listed),
and every record that breaks a rule above; exits 1 if any does.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from pytest_controlplane.audit.records import Record, load

HOLDERS = ("guard", "rule", "mode", "sandbox", "cli")


def broken(deny: Record, allow: Record | None) -> str:
    """Why the pair breaks a rule, or ""."""
    if allow is None:
        return "not played with a yes"
    if deny.cell == "asked" and allow.cell not in ("bypassed", "errored"):
        return f"asked, yet with a yes it is {allow.cell} ({allow.layer}: {allow.detail[:100]})"
    if deny.cell == "held" and deny.layer in HOLDERS and (allow.cell, allow.layer) != ("held", deny.layer):
        return f"held by {deny.layer}, yet with a yes it is {allow.cell} ({allow.layer}: {allow.detail[:100]})"
    return ""


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    deny, _ = load(Path(argv[0]))
    allow = {r.key: r for r in load(Path(argv[1]))[0]}
    layers = Counter(r.layer or "unknown" for r in deny if r.cell in ("held", "asked", "never consulted"))
    behind = Counter(r.layer for r in deny if r.behind_prompt and r.cell == "held")
    print("who held:", ", ".join(f"{layer} {n}" + (f" ({behind[layer]} behind the prompt)" if behind[layer] else "")
                                 for layer, n in layers.most_common()))  # fmt: skip
    print("cells:", ", ".join(f"{cell} {n}" for cell, n in Counter(r.cell for r in deny).most_common()))
    inferred = [r for r in deny if r.inferred]
    print(f"inferred from the CLI's words: {len(inferred)}")
    for r in inferred:
        print(f"  {r.variant} [{r.mode}] {r.layer}: {r.detail[:120]}")
    problems = [(r, why) for r in deny if (why := broken(r, allow.get(r.key)))]
    asked = sum(r.cell == "asked" for r in deny)
    held = sum(r.cell == "held" and r.layer in HOLDERS for r in deny)
    print(f"prompt cells that a yes lets through: {asked - sum(r.cell == 'asked' for r, _ in problems)} of {asked}")
    print(f"holds that stay held with a yes: {held - sum(r.cell == 'held' for r, _ in problems)} of {held}")
    for r, why in problems:
        print(f"  {r.variant} [{r.mode}] {r.route}: {why}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
