"""The terminal summary of agent tests: a line per test (turns, tokens, cassette use, mode) and the totals."""

from __future__ import annotations

import os
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Keys of the user properties an agent test's report carries (`properties`), read back by `Tally`.
SUMMARY, CASSETTE, BYPASS = "controlplane", "controlplane-cassette", "controlplane-bypass"
REPORT = "controlplane-report"  # the path of the test's HTML report, when one was written


def properties(session: Any, *, mode: str) -> list[tuple[str, Any]]:
    """What one agent test's report carries home (through xdist too): its numbers, and its bypass variants with
    the tools its agent offered."""
    from ..bypass.offered import offered_in, route_tool
    from .data import summary

    carried: list[tuple[str, Any]] = [(SUMMARY, summary(session, mode=mode))]
    if session.bypass_outcomes:
        carried.append(
            (
                BYPASS,
                {
                    "variants": [
                        [o.variant.family, o.verdict, route_tool(o.variant), o.variant.reference]
                        for o in session.bypass_outcomes
                    ],
                    "offered": [[t.name, t.tool_class, t.deferred] for t in offered_in(session.gateway.exchanges)],
                },
            )
        )
    return carried


@dataclass
class Tally:
    """The agent tests of a run, read off their reports' user properties."""

    rows: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    used: set[str] = field(default_factory=set)  # cassette files the tests played
    variants: list[list[str]] = field(default_factory=list)
    offered: dict[str, tuple[str, bool]] = field(default_factory=dict)

    @classmethod
    def of(cls, reports: Iterable[Any]) -> Tally:
        tally = cls()
        for report in reports:
            call = getattr(report, "when", "") == "call"
            for key, value in getattr(report, "user_properties", []):
                if key == SUMMARY and call:
                    tally.rows.append((report.nodeid, value))
                elif key == CASSETTE:
                    tally.used.add(value)
                elif key == BYPASS and call:
                    tally.variants += value["variants"]
                    tally.offered.update(
                        {name: (tool_class, deferred) for name, tool_class, deferred in value["offered"]}
                    )
        return tally

    def __bool__(self) -> bool:
        return bool(self.rows or self.used)

    def lines(self, *, verbose: bool, routes: bool, cassette_dir: Path | None, root: Path) -> list[str]:
        """The summary section; `cassette_dir` (when the whole suite ran): also the cassettes no test used, spelled
        from `root`."""
        uncovered = {name for name, (tool_class, _) in self.offered.items() if tool_class == "other"}
        lines = summary_lines(self.rows, each=verbose or len(self.rows) <= 20) + bypass_lines(self.variants, uncovered)
        if routes and self.variants:
            lines += routes_lines(self.offered, self.variants)
        if cassette_dir is not None and cassette_dir.is_dir():
            lines += unused_lines(cassette_dir, self.used, root)
        return lines


def unused_lines(cassette_dir: Path, used: set[str], root: Path) -> list[str]:
    """Cassette files under the cassette dir that no test of this (unfiltered) run used: said when some were used
    (a run that played none says nothing about them)."""
    from ..cassette.audit import cassette_files, unused

    cassettes = cassette_files([cassette_dir])
    stale = unused(cassettes, used)
    if not stale or len(stale) == len(cassettes):
        return []
    shown = ", ".join(os.path.relpath(p, root) for p in stale[:5]) + (" ..." if len(stale) > 5 else "")
    return [
        f"{len(stale)} cassette file(s) no test of this run used: {shown}; if the whole suite ran, "
        f"`controlplane cassettes prune {cassette_dir}` lists them and `--yes` deletes them"
    ]


_COUNTED = (
    "turns", "tokens_in", "tokens_out", "hits", "normalised", "across", "recorded", "misses", "unused", "missing"
)  # fmt: skip


def summary_lines(rows: list[tuple[str, dict[str, Any]]], *, each: bool) -> list[str]:
    """`rows`: (node id, report.data.summary(...)) per agent test; `each`: a line per test before the totals."""
    lines = []
    totals = dict.fromkeys(_COUNTED, 0)
    for nodeid, row in sorted(rows):
        for key in totals:
            totals[key] += int(row.get(key) or 0)
        if each:
            cassette = (
                "missing" if row.get("missing") else f"{_hits(row)} / {row['misses']} miss(es) / {row['unused']} unused"
            )
            lines.append(
                f"{nodeid}: {row['turns']} turn(s), {row['tokens_in']}+{row['tokens_out']} tokens, cassette "
                f"{cassette}, recorded {row['recorded']}, mode {row['mode']}"
            )
    if rows:
        releases = "; ".join(sorted({part for _, row in rows for part in _releases(row)}))
        missing = f", {totals['missing']} cassette(s) missing" if totals["missing"] else ""
        hits = _hits({**totals, "releases": releases})
        lines.append(
            f"total: {len(rows)} agent test(s), {totals['turns']} turn(s), {totals['tokens_in']}+"
            f"{totals['tokens_out']} tokens, cassette {hits} / {totals['misses']} miss(es) / "
            f"{totals['unused']} unused{missing}, recorded {totals['recorded']}"
            + ("" if each else " (-v: a line per test)")
        )
    return lines


def _hits(row: dict[str, Any]) -> str:
    slow, across = int(row.get("normalised") or 0), int(row.get("across") or 0)
    return (
        f"{row['hits']} hit(s)"
        + (f" ({slow} matched only after normalising: slower)" if slow else "")
        + (f", {across} replayed across CLI releases ({'; '.join(_releases(row))})" if across else "")
    )


def _releases(row: dict[str, Any]) -> list[str]:
    """The CLI releases a test's cassette hits were replayed across: "recorded on R, running S" each."""
    return [part for part in str(row.get("releases") or "").split("; ") if part]


# Statuses a family's tally leaves out at 0: held only by the CLI's prompt; an everyday task's done/blocked in an attack
# family, an attack's held/bypassed in the everyday one.
_QUIET = {False: ("asked", "done", "blocked"), True: ("asked", "held", "bypassed")}


def bypass_lines(variants: list[list[str]], not_covered: AbstractSet[str] = frozenset()) -> list[str]:
    """Per bypass family, how its variants ended (`[family, status, tool]` per variant attempted in the run), and the
    tools the agent offered that no route class covers (said, never skipped silently)."""
    from ..bypass.judge import STATUSES

    counts: dict[str, dict[str, int]] = {}
    for family, status, *_ in variants:
        tally = counts.setdefault(family, dict.fromkeys(STATUSES, 0))
        tally[status] = tally.get(status, 0) + 1
    lines = [
        f"bypass variants, {family}: "
        + ", ".join(
            f"{number} {status.replace('_', ' ')}"
            for status, number in tally.items()
            if number or status not in _QUIET[family == "everyday"]  # said where there is any
        )
        for family, tally in sorted(counts.items())
    ]
    if variants and not_covered:
        lines.append(f"offered by the agent, not covered by any bypass route: {', '.join(sorted(not_covered))}")
    return lines


def routes_lines(offered: dict[str, tuple[str, bool]], variants: list[list[str]]) -> list[str]:
    """`--agent-routes`: each tool the agent under test offers (`offered`: name -> (class, deferred)), its class, and
    how many variants of each family went through it (and how they ended); then routes through no offered tool."""
    by_tool: dict[str, dict[str, dict[str, int]]] = {}
    by_reference: dict[str, dict[str, int]] = {}
    for family, status, tool, *reference in variants:
        tally = by_tool.setdefault(tool, {}).setdefault(family, {})
        tally[status] = tally.get(status, 0) + 1
        if reference and reference[0]:
            ended = by_reference.setdefault(reference[0], {})
            ended[status] = ended.get(status, 0) + 1

    def families(tool: str) -> str:
        parts = []
        for family, tally in sorted((by_tool.get(tool) or {}).items()):
            ended = ", ".join(f"{number} {status.replace('_', ' ')}" for status, number in tally.items())
            parts.append(f"{family}: {sum(tally.values())} ({ended})")
        return "; ".join(parts) or "no variant"

    width = max((len(name) for name in offered), default=0)
    lines = ["routes offered by the agent under test (tool, class, variants by family):"]
    lines += [
        f"  {name:<{width}}  {tool_class}{' (deferred)' if deferred else ''}: {families(name)}"
        + ("  <- offered, not covered" if tool_class == "other" else "")
        for name, (tool_class, deferred) in sorted(offered.items())
    ]
    lines += [
        f"  {tool}: {families(tool)}" if tool.startswith("(") else f"  {tool:<{width}}  not offered: {families(tool)}"
        for tool in sorted(by_tool)
        if tool not in offered
    ]
    if by_reference:
        lines.append("the real failures the variants stand for (reference: variants, how they ended):")
        lines += [
            f"  {reference}: {sum(ended.values())} ("
            + ", ".join(f"{number} {status.replace('_', ' ')}" for status, number in ended.items())
            + ")"
            for reference, ended in sorted(by_reference.items())
        ]
    return lines
