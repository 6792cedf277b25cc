"""What runs after the audit (`--fix`, `--coverage`) adds to the reports the audit wrote: a section at the end of
summary.md and of audit.html, the same lines in both."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from ..atomic import write_atomically


def append_section(out: Path, title: str, lines: Sequence[str]) -> list[Path]:
    """Add `title` and `lines` to OUT/summary.md and OUT/audit.html, those of them the audit wrote; the files
    changed."""
    written = []
    summary = out / "summary.md"
    if summary.is_file():
        section = f"\n## {title}\n\n" + "\n".join(f"    {line}" for line in lines) + "\n"
        write_atomically(summary, (summary.read_text(encoding="utf-8") + section).encode())
        written.append(summary)
    page = out / "audit.html"
    if page.is_file():
        section = f"\n<h2>{html.escape(title)}</h2><pre>{html.escape(chr(10).join(lines))}</pre>\n"
        write_atomically(page, (page.read_text(encoding="utf-8") + section).encode())
        written.append(page)
    return written
