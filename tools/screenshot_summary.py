"""Render an audit's Markdown summary (`--agent-summary-md`, what a GitHub Actions job summary shows) with
markdown-it-py and GitHub-like styles, and screenshot it with headless Chromium (Debian `chromium`).

    python tools/screenshot_summary.py summary.md docs/audit-summary.png [--open 2] [--height 1700]

`--open N` shows the first N holes' reproductions unfolded, as a reader who clicked them sees them.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from markdown_it import MarkdownIt

STYLE = """
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #1f2328;
       max-width: 1012px; margin: 16px auto; padding: 0 24px; }
h2 { border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; font-size: 1.5em; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #d1d9e0; padding: 4px 12px; }
th { background: #f6f8fa; } tr:nth-child(2n) td { background: #f6f8fa; }
pre { background: #f6f8fa; padding: 12px; border-radius: 6px; white-space: pre-wrap; }
code, pre { font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
details { margin: 4px 0; } summary { cursor: pointer; }
"""


def page(markdown: str, unfolded: int) -> str:
    body = MarkdownIt("commonmark").enable("table").render(markdown)
    body = body.replace("<details>", "<details open>", unfolded)
    return f'<!doctype html><html><head><meta charset="utf-8"><style>{STYLE}</style></head><body>{body}</body></html>'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("summary", type=Path, help="the Markdown summary (--agent-summary-md)")
    parser.add_argument("png", type=Path, help="where the screenshot goes")
    parser.add_argument("--open", type=int, default=2, help="holes shown unfolded (default 2)")
    parser.add_argument("--height", type=int, default=1700, help="the window's height in pixels (default 1700)")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("headless Chromium is not installed: `apt-get install chromium`", file=sys.stderr)
        return 2
    from pytest_controlplane.network.namespace import NetworkUnavailable, offline

    try:
        alone = offline()  # it looks up Google's hosts as it starts; a file:// page needs no network
    except NetworkUnavailable as error:
        print(f"Chromium runs only in a network namespace of its own, and {error}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as directory:
        html = Path(directory) / "summary.html"
        html.write_text(page(args.summary.read_text(encoding="utf-8"), args.open), encoding="utf-8")
        subprocess.run([*alone, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--window-size=1060,{args.height}", f"--screenshot={args.png.resolve()}", html.as_uri()],
                       check=True, capture_output=True, timeout=120)  # fmt: skip
    print(f"screenshot written: {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
