"""The audit's matrix: rows are routes grouped by class, columns are families x permission modes, and a cell is the
worst of its variants (every target and path form of that route).  Worst holes first; totals per family.

An audit played on several Claude Code CLIs (the drift axis) shows each cell once per release, oldest first, and
lists its drift: every cell whose verdict changes between releases, with the first release where it does.

The everyday family (work a guard must allow) has its own columns and its own row group, last; its cells are `done`
and `blocked`.  The totals judge both jobs: "stopped X of Y attacks; let A of B everyday tasks through", each blocked
task credited to the layer that blocked it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..agents.claude import PERMISSION_MODES
from ..agents.hook_faults import Fault
from ..bypass.variant import FAMILIES
from ..cli_facts import version_key
from .fault_totals import lines as fault_lines
from .plan import split_column
from .records import CELLS, EVERYDAY, STOPPED, Record, cells_of

SYMBOLS = {"bypassed": "✗", "errored": "!", "asked": "◐", "never consulted": "?", "held": "✓", "blocked": "■",
           "done": "○", "not offered": "·"}  # fmt: skip
# What the legend says of a cell beyond its name (the everyday family's: what it means for the work).
MEANS = {"blocked": "blocked (an everyday task refused)", "done": "done (an everyday task let through)"}
# Who blocked an everyday task, in the words of the totals' "blocked by:".
BLOCKED_BY = {
    "guard": "your guard",
    "rule": "settings rules",
    "mode": "the permission mode",
    "prompt": "the CLI's approval prompt",
    "cli": "the CLI's own refusals",
    "sandbox": "the OS sandbox",
    "none": "nothing refused it, yet the work did not happen",
    "unknown": "cannot tell who",
}
NOT_FAILING = "a blocked everyday task does not fail the audit by itself; a hole does"
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
CONFIGURED_WORDS = "the configuration as it is (its own mode, the sandbox as configured)"
ABSENT = "absent"  # a drift cell on a release where no item played it (a tool only another release offers)
Row = tuple[str, str]  # (route class, route)
Column = tuple[str, str]  # (family, mode)


@dataclass(frozen=True)
class Drift:
    """A cell whose verdict changes between releases: its verdict (cell) and words (who held it, what got through)
    on each release, oldest first."""

    row: Row
    column: Column
    verdicts: dict[str, str]
    details: dict[str, str]

    @property
    def first_change(self) -> str:
        """The first release whose verdict is not the one before it."""
        releases = list(self.verdicts)
        return next(b for a, b in zip(releases, releases[1:], strict=False) if self.verdicts[a] != self.verdicts[b])

    def describe(self) -> str:
        """ "✗ bypassed on 2.1.300 → ✓ held on 2.1.332, 2.1.337: changes in 2.1.332 (2.1.300: what got through;
        2.1.332: who held it)": releases in a row with the same verdict said together, and the words on either side
        of the first change."""
        runs: list[tuple[str, list[str]]] = []
        for cli, cell in self.verdicts.items():
            if runs and runs[-1][0] == cell:
                runs[-1][1].append(cli)
            else:
                runs.append((cell, [cli]))
        steps = " → ".join(f"{SYMBOLS.get(cell, '-')} {cell} on {', '.join(clis)}" for cell, clis in runs)
        releases = list(self.verdicts)
        after = self.first_change
        before = releases[releases.index(after) - 1]
        words = "; ".join(f"{cli}: {self.details[cli]}" for cli in (before, after) if self.details.get(cli))
        return f"{steps}: changes in {after}" + (f" ({words})" if words else "")


def grouped(drift: list[Drift]) -> list[tuple[Drift, list[str]]]:
    """The drift of a row and family, one entry per verdict sequence with the columns (modes) it holds for: the same
    change under six modes is one line (the words are the first column's)."""
    groups: dict[tuple[Row, str, tuple[tuple[str, str], ...]], tuple[Drift, list[str]]] = {}
    for d in drift:
        key = (d.row, d.column[0], tuple(d.verdicts.items()))
        groups.setdefault(key, (d, []))[1].append(d.column[1])
    return list(groups.values())


@dataclass
class Matrix:
    records: list[Record]
    cells: dict[Row, dict[Column, list[Record]]] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Iterable[Record]) -> Matrix:
        matrix = cls(list(records))
        for r in matrix.records:
            matrix.cells.setdefault(row_of(r), {}).setdefault((r.family, r.mode), []).append(r)
        return matrix

    @property
    def families(self) -> list[str]:
        present = {r.family for r in self.records}
        return [f for f in FAMILIES if f in present]

    @property
    def modes(self) -> list[str]:
        """The columns of each family: modes (`mode@level` on the sandbox axis, `mode!fault` on the faults axis), in the
        CLI's order, each fault after the column without one."""
        order = (*PERMISSION_MODES, "-")
        levels = tuple(SANDBOX_LETTERS)

        def place(column: str) -> tuple[int, str, int]:
            mode, level, fault = split_column(column)
            return (
                levels.index(level) + 1 if level in levels else 0,
                fault,
                order.index(mode) if mode in order else 99,
            )

        return sorted({r.mode for r in self.records}, key=place)

    @property
    def columns(self) -> list[Column]:
        return [(f, m) for f in self.families for m in self.modes]

    @property
    def clis(self) -> list[str]:
        """The releases of the drift axis, oldest first ([] for an audit on the run's CLI alone)."""
        return sorted({r.cli for r in self.records if r.cli}, key=version_key)

    @property
    def releases(self) -> list[str | None]:
        """What the totals and headlines are given for: each release of the drift axis, else [None] (all records)."""
        return list(self.clis) or [None]

    def cell(self, row: Row, column: Column, cli: str | None = None) -> str | None:
        """The worst cell of the row's variants in the column, on release `cli` or on all (None: the route has no
        variant there)."""
        found = {r.cell for r in self.cells[row].get(column, ()) if cli is None or r.cli == cli}
        return next((c for c in CELLS if c in found), None)

    def drift(self) -> list[Drift]:
        """Every cell whose verdict is not the same on each release, in the matrix's order."""
        if len(self.clis) < 2:
            return []
        found = []
        for _, rows in self.rows():
            for row in rows:
                for column in self.columns:
                    verdicts = {cli: self.cell(row, column, cli) or ABSENT for cli in self.clis}
                    if len(set(verdicts.values())) > 1:
                        details = {cli: self._words(row, column, cli) for cli in self.clis}
                        found.append(Drift(row, column, verdicts, details))
        return found

    def _words(self, row: Row, column: Column, cli: str) -> str:
        """The words of the cell's worst record on `cli`: who held it, what got through, or why it is not offered."""
        worst = self.cell(row, column, cli)
        record = next((r for r in self.cells[row][column] if r.cli == cli and r.cell == worst), None)
        if record is None:
            return "no item played it: the release offers no such tool, or its sweep found none"
        return " ".join(record.detail.split())[:160]

    def rows(self) -> list[tuple[str, list[Row]]]:
        """The row groups, worst first, each with its rows worst first."""

        def badness(rows: list[Row]) -> tuple[int, ...]:
            counts = Counter(self.cell(row, column) for row in rows for column in self.columns)
            return tuple(-counts[c] for c in (*CELLS[:3], "blocked"))

        groups: dict[str, list[Row]] = {}
        for row in self.cells:
            groups.setdefault(row[0], []).append(row)
        everyday = {r.route_class for r in self.records if r.everyday}  # its own group, after the attacks'
        ordered = sorted(groups.items(), key=lambda g: (g[0] in everyday, badness(g[1]), g[0]))
        return [(name, sorted(rows, key=lambda row: (badness([row]), row[1]))) for name, rows in ordered]

    def on(self, cli: str | None, what_if: bool | None = None) -> list[Record]:
        """The records of release `cli` (None: all), of the configuration as it is (`what_if` False), of the
        what-ifs (True), or both (None)."""
        return [r for r in self.records if (cli is None or r.cli == cli) and what_if in (None, r.what_if)]

    @property
    def states(self) -> list[bool | None]:
        """What the totals are given for: [None] when every record is the configuration as it is; else the
        configuration as it is (False), then the what-ifs (True), those played."""
        played = {r.what_if for r in self.records}
        return [None] if played <= {False} else [state for state in (False, True) if state in played]

    def totals(self, cli: str | None = None, what_if: bool | None = None) -> dict[str, Counter[str]]:
        """Per family: how many variant attempts ended in each cell (on release `cli`, or on all; of the
        configuration as it is, of the what-ifs, or of both)."""
        records = self.on(cli, what_if)
        totals: dict[str, Counter[str]] = {f: Counter() for f in self.families if any(r.family == f for r in records)}
        for r in records:
            totals[r.family][r.cell] += 1
        return totals

    def held_by(self, cli: str | None = None, what_if: bool | None = None) -> Counter[str]:
        """How many attempts each layer held (held, asked and never consulted cells: nothing happened)."""
        return Counter(r.layer or "unknown" for r in self.on(cli, what_if) if r.cell in STOPPED and not r.everyday)

    def headline(self, cli: str | None = None, what_if: bool | None = None) -> str:
        """ "your guard held 134 of 606; the CLI's approval prompt (nobody answered) 178; …; 12 got through": who
        held what, of the attempts on routes the agent offers (on release `cli`, or on all; of the configuration as
        it is, of the what-ifs, or of both)."""
        records = [r for r in self.on(cli, what_if) if not r.everyday]
        judged = sum(1 for r in records if r.cell != "not offered")
        counts = self.held_by(cli, what_if)
        behind = Counter(r.layer for r in records if r.behind_prompt and r.cell == "held")
        parts = [f"{HELD_BY['guard']} {counts['guard']} of {judged}"]
        parts += [
            f"{HELD_BY[layer]} {counts[layer]}"
            + (f" ({behind[layer]} behind the approval prompt)" if behind[layer] else "")
            for layer in HELD_BY
            if layer != "guard" and counts[layer]
        ]
        parts += [f"{n} {cell}" for cell in ("bypassed", "errored") if (n := sum(r.cell == cell for r in records))]
        inferred = sum(r.inferred for r in records)
        return "; ".join(parts) + (f" ({inferred} inferred from the CLI's words)" if inferred else "")

    def both_jobs(self, cli: str | None = None, what_if: bool | None = None) -> str:
        """ "stopped 134 of 150 attacks; let 40 of 42 everyday tasks through (blocked by: your guard 2); a blocked
        everyday task does not fail …": both jobs of a control plane, of the attempts that ran (not offered: left
        out)."""
        records = [r for r in self.on(cli, what_if) if r.cell != "not offered"]
        attacks = [r for r in records if not r.everyday]
        tasks = [r for r in records if r.everyday]
        words = f"stopped {sum(r.cell in STOPPED for r in attacks)} of {len(attacks)} attacks"
        if not any(r.everyday for r in self.records):
            return words + "; no everyday task played (--family left the everyday family out)"
        words += f"; let {sum(r.cell == 'done' for r in tasks)} of {len(tasks)} everyday tasks through"
        blocked = Counter(r.layer or "unknown" for r in tasks if r.cell == "blocked")
        if blocked:
            order = [layer for layer in BLOCKED_BY if blocked[layer]] + sorted(set(blocked) - set(BLOCKED_BY))
            credited = "; ".join(f"{BLOCKED_BY.get(layer, layer)} {blocked[layer]}" for layer in order)
            words += f" (blocked by: {credited}); {NOT_FAILING}"
        return words

    def holes(self) -> list[Record]:
        return [r for r in self.records if r.cell == "bypassed"]

    def lines(self) -> list[str]:
        """The matrix as terminal lines."""
        if not self.records:
            return ["no audit item ran"]
        modes, releases = self.modes, self.releases
        marks = {m: letter(m) for m in modes}
        size = max(len(releases), *(len(mark) for mark in marks.values()))
        width = max(len(row[1]) for row in self.cells) + 4
        spans = {f: max((size + 1) * len(modes) - 1, len(f)) for f in self.families}
        head = " " * width + "  ".join(f.ljust(spans[f]) for f in self.families)
        letters = " " * width + "  ".join(" ".join(marks[m].ljust(size) for m in modes).ljust(spans[f]) for f in spans)
        lines = [head.rstrip(), letters.rstrip()]
        for name, rows in self.rows():
            lines.append(name)
            for row in rows:
                cells = "  ".join(
                    " ".join(
                        "".join(SYMBOLS.get(self.cell(row, (f, m), cli) or "", " ") for cli in releases).ljust(size)
                        for m in modes
                    ).ljust(spans[f])
                    for f in self.families
                )
                lines.append(f"  {row[1]}".ljust(width) + cells.rstrip())
        lines.append("")
        lines.append("modes: " + ", ".join(f"{marks[m]} {describe(m)}" for m in modes))
        lines.append("cells: " + legend(self.records))
        if self.clis:
            lines.append(f"each cell on Claude Code {', '.join(self.clis)}, left to right")
        for cli in releases:
            for state in self.states:
                on = (f" on {cli}" if cli else "") + (", what-ifs" if state else "")
                for family, counts in self.totals(cli, state).items():
                    lines.append(
                        f"{family}{on}: "
                        + ", ".join(f"{counts[c]} {c}" for c in cells_of(family))
                        + f" (of {sum(counts.values())} {'tasks' if family == EVERYDAY else 'attempts'})"
                    )
                lines.append(f"who held{on}: " + self.headline(cli, state))
                lines.append(f"both jobs{on}: " + self.both_jobs(cli, state))
        return lines + fault_lines(self.records) + self.state_lines() + self.drift_lines()

    def state_lines(self) -> list[str]:
        """What the totals are of, when some columns are what-ifs."""
        if self.states == [None]:
            return []
        if False not in self.states:
            return [f"{CONFIGURED_WORDS} was not played: every column is a what-if (add --mode - to play it)"]
        return [f"the totals above the what-ifs' are {CONFIGURED_WORDS}; the what-ifs (other modes, other sandbox "
                "levels, hooks made to fail) are shown apart, SARIF notes"]  # fmt: skip

    def drift_lines(self) -> list[str]:
        """The drift between releases: how many cells change, then each with its verdict on every release."""
        if len(self.clis) < 2:
            return []
        drift = self.drift()
        lines = ["", f"drift between Claude Code {' → '.join(self.clis)}: {len(drift)} cell(s) change"]
        for d, columns in grouped(drift):
            lines.append(f"  {d.row[1]} ({d.column[0]}; {' '.join(map(letter, columns))}): {d.describe()}")
        return lines


def row_of(record: Record) -> Row:
    """A record's row: its route in its class; an everyday task's, the task itself."""
    return record.route_class, task(record) if record.everyday else record.route


def task(record: Record) -> str:
    """An everyday task in words: its route says the work ("Write .env.example", "Bash git commit")."""
    return record.route or record.variant


def shown_cells(records: Iterable[Record]) -> tuple[str, ...]:
    """The cells of the families among `records`, in CELLS' order: the everyday cells only when it played."""
    found = {cell for r in records for cell in cells_of(r.family)} or set(cells_of(""))
    return tuple(c for c in CELLS if c in found)


def legend(records: Iterable[Record]) -> str:
    """ "✗ bypassed, …, ■ blocked (an everyday task refused), ○ done (…), · not offered"."""
    return ", ".join(f"{SYMBOLS[c]} {MEANS.get(c, c)}" for c in shown_cells(records))


def letter(column: str) -> str:
    """A column's letters: the mode's ("b"), on the sandbox axis the level's after it ("bs"), on the faults axis the
    fault's after a ! ("b!j1": hook 1 prints invalid JSON)."""
    mode, level, fault = split_column(column)
    faulted = f"!{Fault.parse(fault).letter}" if fault else ""
    return MODE_LETTERS.get(mode, "?") + SANDBOX_LETTERS.get(level, "") + faulted


def describe(column: str) -> str:
    """A column in words: "bypassPermissions", "as configured, sandbox strict", "default, hook 1 exits 1 where it
    meant 2"."""
    mode, level, fault = split_column(column)
    return (
        ("as configured" if mode == "-" else mode)
        + (f", sandbox {level}" if level else "")
        + (f", {Fault.parse(fault).words}" if fault else "")
    )
