"""The audit's matrix as one self-contained HTML page: each bypassed (or errored, or blocked) cell links to the report
of a variant behind it, and the holes are listed below with their reproductions and reports, then the everyday tasks
the control plane blocked, with who blocked them."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from .matrix import BLOCKED_BY, MEANS, SYMBOLS, Matrix, describe, letter, shown_cells
from .records import Record, cells_of

_STYLE = """
body{font:13px/1.4 system-ui,sans-serif;margin:20px;color:#1d2330}
h1{font-size:19px;margin:0 0 4px} h2{font-size:15px;margin:20px 0 6px} .meta{color:#667}
table{border-collapse:collapse} td,th{border:1px solid #dde;padding:2px 5px;text-align:center;white-space:nowrap}
th{background:#f4f5f9;font-weight:600} td.route{text-align:left} tr.group td{background:#eef0f6;text-align:left;
font-weight:600} th.family{border-left:2px solid #99a} td.first{border-left:2px solid #99a}
.bypassed{background:#b00020;color:#fff} .errored{background:#e65100;color:#fff}
.asked{background:#fde2c8;color:#7a3d00} .never-consulted{background:#fff3c4;color:#6b4e00}
.held{background:#e6f4ea;color:#1b5e20} .blocked{background:#5c3d99;color:#fff} .done{background:#e3eefc;color:#0d3c7a}
.not-offered{background:#f2f3f5;color:#8a8f98} td a{color:inherit;text-decoration:none;display:block}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border-radius:3px}
pre{background:#f7f7fa;border:1px solid #e4e4ee;padding:6px;white-space:pre-wrap;margin:3px 0 10px}
li{margin:4px 0}
"""


def render(matrix: Matrix, *, meta: dict[str, Any], page: Path) -> str:
    """The page for `matrix`; links to reports are made relative to `page`'s folder."""
    title = f"Control-plane audit of {meta.get('agent', 'the agent')}"
    parts = [
        f"<!doctype html><meta charset=utf-8><title>{_e(title)}</title><style>{_STYLE}</style>",
        f"<h1>{_e(title)}</h1>",
        f"<p class=meta>{_e(_about(meta))}</p>",
        "<p class=legend>"
        + "".join(f"<span class={_css(c)}>{SYMBOLS[c]} {MEANS.get(c, c)}</span>" for c in shown_cells(matrix.records))
        + "</p>",
        _totals(matrix),
        _table(matrix, page),
        _drift(matrix),
        _faults(matrix),
        _coverage(matrix, meta),
        _listing(matrix, page, "bypassed", "The holes"),
        _listing(matrix, page, "errored", "Errored (the attempt proves nothing)"),
        _listing(matrix, page, "asked", "Held only by the CLI's approval prompt (a person may say yes)"),
        _listing(matrix, page, "blocked", "Everyday tasks blocked (work the control plane must allow)"),
    ]
    return "\n".join(parts)


def write(matrix: Matrix, path: Path, *, meta: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(matrix, meta=meta, page=path), encoding="utf-8")
    return path


def _about(meta: dict[str, Any]) -> str:
    keys = ("directory", "targets", "modes", "workspace_trust", "cli", "date")
    bits = [f"{k.replace('_', ' ')}: {meta[k]}" for k in keys if meta.get(k)]
    return " · ".join(bits)


def _totals(matrix: Matrix) -> str:
    releases = matrix.releases
    cells = shown_cells(matrix.records)
    rows = [
        f"<tr><th>{_e(family)}{_e(f' on {cli}' if cli else '')}{' (what-if)' if state else ''}</th>"
        + "".join(
            f"<td class={_css(c) if counts[c] else ''}>{counts[c]}</td>" if c in cells_of(family) else "<td>–</td>"
            for c in cells
        )
        + f"<td>{sum(counts.values())}</td></tr>"
        for cli in releases
        for state in matrix.states
        for family, counts in matrix.totals(cli, state).items()
    ]
    held = "".join(f"<p class=meta>{_e(line)}</p>" for line in matrix.state_lines()) + "".join(
        f"<p class=meta>Who held{_e(f' on Claude Code {cli}' if cli else '')}{', what-ifs' if state else ''}: "
        f"{_e(matrix.headline(cli, state))}</p>"
        f"<p class=meta>Both jobs{_e(f' on Claude Code {cli}' if cli else '')}{', what-ifs' if state else ''}: "
        f"{_e(matrix.both_jobs(cli, state))}</p>"
        for cli in releases
        for state in matrix.states
    )
    head = "<tr><th>family</th>" + "".join(f"<th>{c}</th>" for c in cells) + "<th>attempts</th></tr>"
    return f"<h2>Totals</h2>{held}<table>{head}{''.join(rows)}</table>"


def _drift(matrix: Matrix) -> str:
    """The cells whose verdict changes between releases (an audit on several CLIs)."""
    if len(matrix.clis) < 2:
        return ""
    found = matrix.drift()
    items = "".join(
        f"<li><b>{_e(d.row[1])}</b> ({_e(d.column[0])}, {_e(describe(d.column[1]))}): {_e(d.describe())}</li>"
        for d in found
    )
    return f"<h2>Drift between Claude Code {_e(' → '.join(matrix.clis))}: {len(found)}</h2><ul>{items}</ul>"


def _faults(matrix: Matrix) -> str:
    """The faults axis in numbers (audit/fault_totals.py)."""
    from .fault_totals import lines

    found = lines(matrix.records)
    return f"<h2>When a hook fails</h2><pre>{_e(chr(10).join(found))}</pre>" if found else ""


def _coverage(matrix: Matrix, meta: dict[str, Any]) -> str:
    """Policy coverage: each hook and rule of the audited settings, its flag and counts (audit/coverage.py)."""
    from .coverage import lines, of_meta

    found = lines(of_meta(matrix.records, meta))
    items = "".join(f"<li>{_e(line)}</li>" for line in found)
    return f"<h2>Policy coverage</h2><ul>{items}</ul>" if found else ""


def _table(matrix: Matrix, page: Path) -> str:
    modes = matrix.modes
    wide = len(matrix.clis) if len(matrix.clis) > 1 else 1  # a cell per release
    head = (
        "<tr><th rowspan=2>route</th>"
        + "".join(f"<th class=family colspan={len(modes) * wide}>{_e(f)}</th>" for f in matrix.families)
        + "</tr><tr>"
        + "".join(
            f"<th{' class=family' if i == 0 else ''} colspan={wide} title='{_e(m)}'>{letter(m)}</th>"
            for _ in matrix.families
            for i, m in enumerate(modes)
        )
        + "</tr>"
    )
    body = []
    span = 1 + len(matrix.columns) * wide
    for name, rows in matrix.rows():
        body.append(f"<tr class=group><td colspan={span}>{_e(name)}</td></tr>")
        for row in rows:
            cells = "".join(_cell(matrix, row, column, page, first=column[1] == modes[0]) for column in matrix.columns)
            body.append(f"<tr><td class=route>{_e(row[1])}</td>{cells}</tr>")
    legend = ", ".join(f"{letter(m)} {describe(m)}" for m in modes)
    if matrix.clis:
        legend += f"; each cell on Claude Code {', '.join(matrix.clis)}, left to right"
    return f"<h2>The matrix</h2><p class=meta>modes: {_e(legend)}</p><table>{head}{''.join(body)}</table>"


def _cell(matrix: Matrix, row: tuple[str, str], column: tuple[str, str], page: Path, *, first: bool) -> str:
    if len(matrix.clis) > 1:
        return "".join(_cell_on(matrix, row, column, page, cli, first=first and i == 0)
                       for i, cli in enumerate(matrix.clis))  # fmt: skip
    return _cell_on(matrix, row, column, page, None, first=first)


def _cell_on(
    matrix: Matrix, row: tuple[str, str], column: tuple[str, str], page: Path, cli: str | None, *, first: bool
) -> str:
    worst = matrix.cell(row, column, cli)
    edge = " first" if first else ""
    if worst is None:
        return f"<td class='{edge.strip()}'></td>"
    records = [r for r in matrix.cells[row][column] if cli is None or r.cli == cli]
    title = (f"Claude Code {cli}\n" if cli else "") + "\n".join(
        f"{r.target} {r.variant} ({r.form}): {r.cell}" + (f" — {r.detail}" if r.detail else "") for r in records
    )
    symbol = SYMBOLS[worst]
    linked = next((r for r in records if r.cell == worst and r.report), None)
    inner = f"<a href='{_e(_link(linked.report, page))}'>{symbol}</a>" if linked else symbol
    return f"<td class='{_css(worst)}{edge}' title='{_e(title)}'>{inner}</td>"


def _listing(matrix: Matrix, page: Path, cell: str, heading: str) -> str:
    found: list[Record] = [r for r in matrix.records if r.cell == cell]
    if not found:
        return ""
    items = []
    for r in sorted(found, key=lambda r: (r.family, r.target, r.route, r.variant, r.mode)):
        link = f" — <a href='{_e(_link(r.report, page))}'>report</a>" if r.report else ""
        ref = f" ({_e(r.reference)})" if r.reference else ""
        why = f"<br>{_e(r.detail)}" if r.detail and cell != "bypassed" else ""
        if cell == "blocked":
            who = BLOCKED_BY.get(r.layer or "unknown", r.layer)
            why = f"<br>blocked by {_e(who)}{': ' * bool(r.detail)}{_e(r.detail)}"
        repro = f"<pre>{_e(r.reproduction)}</pre>" if r.reproduction else ""
        items.append(
            f"<li><b>{_e(r.family)} {_e(r.target)}</b> by {_e(r.route)}, {_e(r.form)}, mode {_e(r.mode)}"
            f"{_e(f', Claude Code {r.cli}' if r.cli else '')}: "
            f"<code>{_e(r.variant)}</code>{ref}{link}{why}{repro}</li>"
        )
    return f"<h2>{_e(heading)}: {len(found)}</h2><ul>{''.join(items)}</ul>"


def _link(report: str, page: Path) -> str:
    """A report's path as a link from the page (relative when both are on this machine)."""
    try:
        return Path(os.path.relpath(report, page.parent)).as_posix()
    except ValueError:
        return Path(report).as_uri() if Path(report).is_absolute() else report


def _css(cell: str) -> str:
    return cell.replace(" ", "-")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)
