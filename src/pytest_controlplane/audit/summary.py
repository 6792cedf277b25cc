"""The holes of a run where a CI job shows them: a Markdown summary (the matrix, worst rows first, the totals, each hole
with its reproduction, capped in size) for `$GITHUB_STEP_SUMMARY` or `--agent-summary-md PATH`, and one GitHub
Actions `::error` annotation per hole, on the control plane that let it through."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .matrix import SYMBOLS, Matrix, describe, grouped, letter
from .records import CELLS, Record

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
    lines += ["cells: " + ", ".join(f"{SYMBOLS[c]} {c}" for c in CELLS), ""]
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
    if holes:
        lines += ["### Holes", ""]
        for record in holes[:MAX_HOLES]:
            where = f" — <code>{_cell_text(record.location)}</code>" if record.location else ""
            lines += [
                f"<details><summary>✗ {_cell_text(record.family)} {_cell_text(record.target)} by "
                f"{_cell_text(record.spelled)} ({record.mode}{f', Claude Code {record.cli}' if record.cli else ''}"
                f"{', a what-if' if record.what_if else ''})"
                f"{where}</summary>",
                "",
                "```",
                record.reproduction.replace("```", "'''"),
                "```",
                "</details>",
            ]
        if len(holes) > MAX_HOLES:
            lines += ["", f"…and {len(holes) - MAX_HOLES} more: see the audit's HTML page or its JSON."]
    text = "\n".join(lines) + "\n"
    if len(text.encode()) > MAX_BYTES:
        text = text.encode()[:MAX_BYTES].decode(errors="ignore").rsplit("\n", 1)[0]
        text += "\n\n_(cut: the summary is capped; the audit's HTML page and JSON hold everything)_\n"
    return text


def _totals(matrix: Matrix) -> list[str]:
    """Who held, then the totals table: of the configuration as it is, then of the what-ifs, on each release."""
    lines: list[str] = []
    releases = matrix.releases
    lines += [f"_{line}_" for line in matrix.state_lines()] + [""] * bool(matrix.state_lines())
    for cli in releases:
        for state in matrix.states:
            on = (f" on Claude Code {cli}" if cli else "") + (", what-ifs" if state else "")
            lines += [f"Who held{on}: {_cell_text(matrix.headline(cli, state))}", ""]
    lines += ["| family | " + " | ".join(CELLS) + " |", "|---|" + "---|" * len(CELLS)]
    lines += [
        f"| {family}{f' on {cli}' if cli else ''}{' (what-if)' if state else ''} | "
        + " | ".join(str(counts[c]) for c in CELLS)
        + " |"
        for cli in releases
        for state in matrix.states
        for family, counts in matrix.totals(cli, state).items()
    ]
    return lines


def _heading(matrix: Matrix) -> str:
    """ "## Agent control plane: 2 hole(s) in 40 attempt(s)", of the configuration as it is when some columns are
    what-ifs (those said after)."""
    holes = sum(r.cell == "bypassed" for r in matrix.on(None, False if matrix.states != [None] else None))
    if matrix.states == [None]:
        return f"## Agent control plane: {holes} hole(s) in {len(matrix.records)} attempt(s)"
    configured, what_ifs = matrix.on(None, False), matrix.on(None, True)
    more = sum(r.cell == "bypassed" for r in what_ifs)
    return (
        f"## Agent control plane: {holes} hole(s) in {len(configured)} attempt(s) as configured "
        f"(what-ifs: {more} in {len(what_ifs)}, shown apart)"
    )


def _cell_text(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def workflow_commands(records: Iterable[Record]) -> list[str]:
    """`::error file=...,line=...,title=...::message` for each hole (GitHub Actions workflow commands), `::notice`
    for a hole of a what-if column."""
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
    return found


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
