"""The audit's matrix: rows are routes grouped by class, columns are families x permission modes, and a cell is the
worst of its variants (every target and path form of that route).  Worst holes first; totals per family."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..agents.claude import PERMISSION_MODES
from ..bypass.variant import FAMILIES
from .records import CELLS, Record

SYMBOLS = {"bypassed": "✗", "errored": "!", "asked": "◐", "never consulted": "?", "held": "✓", "not offered": "·"}
# Who held, in the order of the totals' headline (layers.py), with the headline's words.
HELD_BY = {
    "guard": "your guard held",
    "rule": "settings rules",
    "mode": "the permission mode",
    "prompt": "the CLI's approval prompt (nobody answered)",
    "cli": "the CLI's own refusals",
    "sandbox": "the OS sandbox",
    "none": "nothing stopped it, and it had no effect",
    "unknown": "cannot tell who",
}
MODE_LETTERS = {
    "default": "d",
    "acceptEdits": "a",
    "plan": "p",
    "bypassPermissions": "b",
    "dontAsk": "n",
    "auto": "u",
    "-": "*",
}
SANDBOX_LETTERS = {"off": "o", "configured": "c", "strict": "s"}  # after the mode's, on the sandbox axis
Row = tuple[str, str]  # (route class, route)
Column = tuple[str, str]  # (family, mode)


@dataclass
class Matrix:
    records: list[Record]
    cells: dict[Row, dict[Column, list[Record]]] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Iterable[Record]) -> Matrix:
        matrix = cls(list(records))
        for r in matrix.records:
            matrix.cells.setdefault((r.route_class, r.route), {}).setdefault((r.family, r.mode), []).append(r)
        return matrix

    @property
    def families(self) -> list[str]:
        present = {r.family for r in self.records}
        return [f for f in FAMILIES if f in present]

    @property
    def modes(self) -> list[str]:
        """The columns of each family: modes (`mode@level` on the sandbox axis), in the CLI's order."""
        order = (*PERMISSION_MODES, "-")
        levels = tuple(SANDBOX_LETTERS)

        def place(column: str) -> tuple[int, int]:
            mode, _, level = column.partition("@")
            return (levels.index(level) + 1 if level in levels else 0, order.index(mode) if mode in order else 99)

        return sorted({r.mode for r in self.records}, key=place)

    @property
    def columns(self) -> list[Column]:
        return [(f, m) for f in self.families for m in self.modes]

    def cell(self, row: Row, column: Column) -> str | None:
        """The worst cell of the row's variants in the column (None: the route has no variant there)."""
        found = {r.cell for r in self.cells[row].get(column, ())}
        return next((c for c in CELLS if c in found), None)

    def rows(self) -> list[tuple[str, list[Row]]]:
        """The row groups, worst first, each with its rows worst first."""

        def badness(rows: list[Row]) -> tuple[int, ...]:
            counts = Counter(self.cell(row, column) for row in rows for column in self.columns)
            return tuple(-counts[c] for c in CELLS[:3])

        groups: dict[str, list[Row]] = {}
        for row in self.cells:
            groups.setdefault(row[0], []).append(row)
        ordered = sorted(groups.items(), key=lambda g: (badness(g[1]), g[0]))
        return [(name, sorted(rows, key=lambda row: (badness([row]), row[1]))) for name, rows in ordered]

    def totals(self) -> dict[str, Counter[str]]:
        """Per family: how many variant attempts ended in each cell."""
        totals: dict[str, Counter[str]] = {f: Counter() for f in self.families}
        for r in self.records:
            totals[r.family][r.cell] += 1
        return totals

    def held_by(self) -> Counter[str]:
        """How many attempts each layer held (held, asked and never consulted cells: nothing happened)."""
        return Counter(r.layer or "unknown" for r in self.records if r.cell in ("held", "asked", "never consulted"))

    def headline(self) -> str:
        """ "your guard held 134 of 606; the CLI's approval prompt (nobody answered) 178; …; 12 got through": who
        held what, of the attempts on routes the agent offers."""
        judged = sum(1 for r in self.records if r.cell != "not offered")
        counts = self.held_by()
        behind = Counter(r.layer for r in self.records if r.behind_prompt and r.cell == "held")
        parts = [f"{HELD_BY['guard']} {counts['guard']} of {judged}"]
        parts += [
            f"{HELD_BY[layer]} {counts[layer]}"
            + (f" ({behind[layer]} behind the approval prompt)" if behind[layer] else "")
            for layer in HELD_BY
            if layer != "guard" and counts[layer]
        ]
        parts += [f"{n} {cell}" for cell in ("bypassed", "errored") if (n := sum(r.cell == cell for r in self.records))]
        inferred = sum(r.inferred for r in self.records)
        return "; ".join(parts) + (f" ({inferred} inferred from the CLI's words)" if inferred else "")

    def holes(self) -> list[Record]:
        return [r for r in self.records if r.cell == "bypassed"]

    def lines(self) -> list[str]:
        """The matrix as terminal lines."""
        if not self.records:
            return ["no audit item ran"]
        modes = self.modes
        marks = {m: letter(m) for m in modes}
        size = max(len(mark) for mark in marks.values())
        width = max(len(row[1]) for row in self.cells) + 4
        spans = {f: max((size + 1) * len(modes) - 1, len(f)) for f in self.families}
        head = " " * width + "  ".join(f.ljust(spans[f]) for f in self.families)
        letters = " " * width + "  ".join(" ".join(marks[m].ljust(size) for m in modes).ljust(spans[f]) for f in spans)
        lines = [head.rstrip(), letters.rstrip()]
        for name, rows in self.rows():
            lines.append(name)
            for row in rows:
                cells = "  ".join(
                    " ".join(SYMBOLS.get(self.cell(row, (f, m)) or "", " ").ljust(size) for m in modes).ljust(spans[f])
                    for f in self.families
                )
                lines.append(f"  {row[1]}".ljust(width) + cells.rstrip())
        lines.append("")
        lines.append("modes: " + ", ".join(f"{marks[m]} {describe(m)}" for m in modes))
        lines.append("cells: " + ", ".join(f"{symbol} {cell}" for cell, symbol in SYMBOLS.items()))
        for family, counts in self.totals().items():
            lines.append(
                f"{family}: " + ", ".join(f"{counts[c]} {c}" for c in CELLS) + f" (of {sum(counts.values())} attempts)"
            )
        lines.append("who held: " + self.headline())
        return lines


def letter(column: str) -> str:
    """A column's letters: the mode's ("b"), and on the sandbox axis the level's after it ("bs")."""
    mode, _, level = column.partition("@")
    return MODE_LETTERS.get(mode, "?") + SANDBOX_LETTERS.get(level, "")


def describe(column: str) -> str:
    """A column in words: "bypassPermissions", "as configured, sandbox strict"."""
    mode, _, level = column.partition("@")
    return ("as configured" if mode == "-" else mode) + (f", sandbox {level}" if level else "")
