"""The terminal summary of agent tests: a line per test (turns, tokens, cassette use, mode) and the totals."""

from __future__ import annotations

from typing import Any

_COUNTED = ("turns", "tokens_in", "tokens_out", "hits", "normalised", "recorded", "misses", "unused", "missing")


def summary_lines(rows: list[tuple[str, dict[str, Any]]], *, each: bool) -> list[str]:
    """`rows`: (node id, report.data.summary(...)) per agent test; `each`: a line per test before the totals."""
    lines = []
    totals = dict.fromkeys(_COUNTED, 0)
    for nodeid, row in sorted(rows):
        for key in totals:
            totals[key] += int(row.get(key) or 0)
        if each:
            cassette = "missing" if row.get("missing") else f"{_hits(row)} / {row['misses']} miss(es) / " \
                                                             f"{row['unused']} unused"
            lines.append(f"{nodeid}: {row['turns']} turn(s), {row['tokens_in']}+{row['tokens_out']} tokens, cassette "
                         f"{cassette}, recorded {row['recorded']}, mode {row['mode']}")
    if rows:
        missing = f", {totals['missing']} cassette(s) missing" if totals["missing"] else ""
        lines.append(f"total: {len(rows)} agent test(s), {totals['turns']} turn(s), {totals['tokens_in']}+"
                     f"{totals['tokens_out']} tokens, cassette {_hits(totals)} / {totals['misses']} miss(es) / "
                     f"{totals['unused']} unused{missing}, recorded {totals['recorded']}"
                     + ("" if each else " (-v: a line per test)"))
    return lines


def _hits(row: dict[str, Any]) -> str:
    slow = int(row.get("normalised") or 0)
    return f"{row['hits']} hit(s)" + (f" ({slow} matched only after normalising: slower)" if slow else "")


def bypass_lines(variants: list[list[str]], not_covered: set[str] = frozenset()) -> list[str]:
    """Per bypass family, how its variants ended (`[family, status, tool]` per variant attempted in the run), and the
    tools the agent offered that no route class covers (said, never skipped silently)."""
    from ..bypass.judge import STATUSES

    counts: dict[str, dict[str, int]] = {}
    for family, status, *_ in variants:
        tally = counts.setdefault(family, dict.fromkeys(STATUSES, 0))
        tally[status] = tally.get(status, 0) + 1
    lines = [f"bypass variants, {family}: " + ", ".join(f"{number} {status.replace('_', ' ')}"
                                                         for status, number in tally.items())
             for family, tally in sorted(counts.items())]
    if variants and not_covered:
        lines.append(f"offered by the agent, not covered by any bypass route: {', '.join(sorted(not_covered))}")
    return lines


def routes_lines(offered: dict[str, tuple[str, bool]], variants: list[list[str]]) -> list[str]:
    """`--agent-routes`: each tool the agent under test offers (`offered`: name -> (class, deferred)), its class, and
    how many variants of each family went through it (and how they ended); then routes through no offered tool."""
    by_tool: dict[str, dict[str, dict[str, int]]] = {}
    for family, status, tool in variants:
        tally = by_tool.setdefault(tool, {}).setdefault(family, {})
        tally[status] = tally.get(status, 0) + 1

    def families(tool: str) -> str:
        parts = []
        for family, tally in sorted((by_tool.get(tool) or {}).items()):
            ended = ", ".join(f"{number} {status.replace('_', ' ')}" for status, number in tally.items())
            parts.append(f"{family}: {sum(tally.values())} ({ended})")
        return "; ".join(parts) or "no variant"

    width = max((len(name) for name in offered), default=0)
    lines = ["routes offered by the agent under test (tool, class, variants by family):"]
    lines += [f"  {name:<{width}}  {tool_class}{' (deferred)' if deferred else ''}: {families(name)}"
              + ("  <- offered, not covered" if tool_class == "other" else "")
              for name, (tool_class, deferred) in sorted(offered.items())]
    lines += [f"  {tool}: {families(tool)}" if tool.startswith("(") else f"  {tool:<{width}}  not offered: "
              f"{families(tool)}" for tool in sorted(by_tool) if tool not in offered]
    return lines
