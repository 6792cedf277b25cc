"""The holes of a run where a CI job shows them: a Markdown summary (the matrix, worst rows first, the totals, each hole
with its reproduction, each everyday task blocked with who blocked it, capped in size) for `$GITHUB_STEP_SUMMARY` or
`--agent-summary-md PATH`, and one GitHub Actions `::error` annotation per hole, on the control plane that let it
through (a `::warning` per everyday task blocked, on the control plane that blocked it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .fault_totals import lines as fault_lines
from .matrix import BLOCKED_BY, SYMBOLS, Matrix, describe, grouped, legend, letter, shown_cells, task
from .records import Record, cells_of

MAX_BYTES = 60_000  # GitHub shows at most 1 MiB of a step's summary; a few screens is what a reader takes in
MAX_HOLES = 50
MAX_ANNOTATIONS = 50  # GitHub keeps 10 error annotations per step, 50 per job


def markdown(records: Iterable[Record], *, meta: dict[str, Any]) -> str:
    """The summary of `records` as Markdown."""
    matrix = Matrix.of(records)
    holes = [r for r in matrix.records if r.cell == "bypassed"]
    lines = [_heading(matrix), ""]
    keys = ("directory", "workspace_trust", "cli", "date")
    about = ", ".join(f"{key.replace('_', ' ')} {meta[key]}" for key in keys if meta.get(key))
    if about:
        lines += [f"_{about}_", ""]
    releases = matrix.releases
    lines += _totals(matrix)
    columns = matrix.columns
    lines += ["", "| route | " + " | ".join(f"{family} {letter(mode)}" for family, mode in columns)
              + " |", "|---|" + "---|" * len(columns)]  # fmt: skip
    for group, rows in matrix.rows():
        for row in rows:
            cells = ["".join(SYMBOLS.get(matrix.cell(row, column, cli) or "", " ") for cli in releases)
                     for column in columns]  # fmt: skip
            lines.append(f"| {_cell_text(row[1])} <sub>{_cell_text(group)}</sub> | " + " | ".join(cells) + " |")
    lines += ["", "modes: " + ", ".join(f"{letter(mode)} {describe(mode)}" for mode in matrix.modes), ""]
    lines += ["cells: " + legend(matrix.records), ""]
    if matrix.clis:
        lines += [f"each cell on Claude Code {', '.join(matrix.clis)}, left to right", ""]
    drift = matrix.drift()
    if len(matrix.clis) > 1:
        lines += [f"### Drift between Claude Code {' → '.join(matrix.clis)}: {len(drift)} cell(s) change", ""]
        lines += [
            f"- {_cell_text(d.row[1])} ({d.column[0]}; {', '.join(map(describe, columns))}): {_cell_text(d.describe())}"
            for d, columns in grouped(drift)
        ]
        lines += [""] * bool(drift)
    lines += [f"    {line}" for line in fault_lines(matrix.records)] + [""] * bool(fault_lines(matrix.records))
    lines += _coverage(matrix.records, meta)
    if holes:
        lines += ["### Holes", ""]
        for record in holes[:MAX_HOLES]:
            what = f"{_cell_text(record.family)} {_cell_text(record.target)} by {_cell_text(record.spelled)}"
            lines += _details(record, f"✗ {what} ({_column(record)})")
        if len(holes) > MAX_HOLES:
            lines += ["", f"…and {len(holes) - MAX_HOLES} more: see the audit's HTML page or its JSON."]
    lines += _blocked(matrix)
    text = "\n".join(lines) + "\n"
    if len(text.encode()) > MAX_BYTES:
        text = text.encode()[:MAX_BYTES].decode(errors="ignore").rsplit("\n", 1)[0]
        text += "\n\n_(cut: the summary is capped; the audit's HTML page and JSON hold everything)_\n"
    return text


def _coverage(records: list[Record], meta: dict[str, Any]) -> list[str]:
    """ "### Policy coverage": each hook and rule of the audited settings, its flag and counts (audit/coverage.py)."""
    from .coverage import lines, of_meta

    found = lines(of_meta(records, meta))
    return ["### Policy coverage", "", *(f"- {_cell_text(line)}" for line in found), ""] if found else []


def _totals(matrix: Matrix) -> list[str]:
    """Who held, then the totals table: of the configuration as it is, then of the what-ifs, on each release."""
    lines: list[str] = []
    releases = matrix.releases
    lines += [f"_{line}_" for line in matrix.state_lines()] + [""] * bool(matrix.state_lines())
    for cli in releases:
        for state in matrix.states:
            on = (f" on Claude Code {cli}" if cli else "") + (", what-ifs" if state else "")
            lines += [f"Who held{on}: {_cell_text(matrix.headline(cli, state))}", ""]
            lines += [f"Both jobs{on}: {_cell_text(matrix.both_jobs(cli, state))}", ""]
    cells = shown_cells(matrix.records)
    lines += ["| family | " + " | ".join(cells) + " |", "|---|" + "---|" * len(cells)]
    lines += [
        f"| {family}{f' on {cli}' if cli else ''}{' (what-if)' if state else ''} | "
        + " | ".join(str(counts[c]) if c in cells_of(family) else "–" for c in cells)
        + " |"
        for cli in releases
        for state in matrix.states
        for family, counts in matrix.totals(cli, state).items()
    ]
    return lines


def _column(record: Record) -> str:
    """Where a record played: its mode, its release on a drift axis, and whether it is a what-if."""
    return (
        f"{record.mode}{f', Claude Code {record.cli}' if record.cli else ''}{', a what-if' if record.what_if else ''}"
    )


def _details(record: Record, summary: str) -> list[str]:
    """A record folded under `summary` (with where it was decided), its reproduction inside."""
    where = f" — <code>{_cell_text(record.location)}</code>" if record.location else ""
    reproduction = record.reproduction.replace("```", "'''")
    return [f"<details><summary>{summary}{where}</summary>", "", "```", reproduction, "```", "</details>"]


def _blocked(matrix: Matrix) -> list[str]:
    """Each everyday task blocked, with who blocked it (hook file:line, rule) and how to play it again."""
    blocked = [r for r in matrix.records if r.cell == "blocked"]
    lines = ["", "### Everyday tasks blocked (work the control plane must allow)", ""] * bool(blocked)
    for record in blocked[:MAX_HOLES]:
        blocker = _cell_text(_blocker(record))
        lines += _details(record, f"■ {_cell_text(task(record))} ({_column(record)}): blocked by {blocker}")
    if len(blocked) > MAX_HOLES:
        lines += ["", f"…and {len(blocked) - MAX_HOLES} more: see the audit's HTML page or its JSON."]
    return lines


def _blocker(record: Record) -> str:
    """Who blocked an everyday task: the layer, and its words (the hook, the rule)."""
    layer = BLOCKED_BY.get(record.layer or "unknown", record.layer)
    detail = " ".join(record.detail.split())[:200]
    return f"{layer} ({detail})" if detail else layer


def _heading(matrix: Matrix) -> str:
    """ "## Agent control plane: 2 hole(s) in 40 attempt(s)", of the configuration as it is when some columns are
    what-ifs (those said after), then the everyday tasks blocked when the everyday family played."""
    attacks = [r for r in matrix.records if not r.everyday]
    holes = sum(r.cell == "bypassed" for r in attacks if matrix.states == [None] or not r.what_if)
    if matrix.states == [None]:
        return f"## Agent control plane: {holes} hole(s) in {len(attacks)} attempt(s)" + _everyday(matrix.records)
    configured = [r for r in attacks if not r.what_if]
    what_ifs = [r for r in attacks if r.what_if]
    more = sum(r.cell == "bypassed" for r in what_ifs)
    return (
        f"## Agent control plane: {holes} hole(s) in {len(configured)} attempt(s) as configured "
        f"(what-ifs: {more} in {len(what_ifs)}, shown apart)" + _everyday([r for r in matrix.records if not r.what_if])
    )


def _everyday(records: list[Record]) -> str:
    """ ", 3 of 14 everyday task(s) blocked", when the everyday family played."""
    tasks = [r for r in records if r.everyday and r.cell != "not offered"]
    blocked = sum(r.cell == "blocked" for r in tasks)
    return f", {blocked} of {len(tasks)} everyday task(s) blocked" if tasks else ""


def _cell_text(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def workflow_commands(records: Iterable[Record]) -> list[str]:
    """`::error file=...,line=...,title=...::message` for each hole (GitHub Actions workflow commands), `::notice`
    for a hole of a what-if column; then a `::warning` for each everyday task blocked."""
    records = list(records)
    found = []
    for record in [r for r in records if r.cell == "bypassed"][:MAX_ANNOTATIONS]:
        path, line = record.place
        title = f"{record.family} {record.target} got through by {record.route}"
        on = f", Claude Code {record.cli}" if record.cli else ""
        message = f"{record.family} {record.target} got through by {record.spelled} ({record.mode}{on})."
        message += (f" {record.seen_by[0].upper()}{record.seen_by[1:]}." if record.seen_by else "") + " Reproduce:"
        message += "\n" + record.reproduction
        kind = "notice" if record.what_if else "error"  # a what-if column is no alert of the configuration's
        found.append(f"::{kind} file={_property(path)},line={line},title={_property(title)}::{_data(message)}")
    return found + _warnings(records, MAX_ANNOTATIONS - len(found))


def _warnings(records: list[Record], room: int) -> list[str]:
    """`::warning` for each everyday task blocked (`::notice` in a what-if column), on the control plane that
    blocked it."""
    found = []
    for record in [r for r in records if r.cell == "blocked"][: max(0, room)]:
        path, line = record.place
        title = f"an everyday task was blocked: {task(record)}"
        message = f"An everyday task was blocked: {task(record)} ({record.mode}) by {_blocker(record)}. Reproduce:"
        message += "\n" + record.reproduction
        kind = "notice" if record.what_if else "warning"
        found.append(f"::{kind} file={_property(path)},line={line},title={_property(title)}::{_data(message)}")
    return found


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
