"""pytest wiring of the audit's quiet terminal: no letter and no traceback per item (each hole is in the matrix, its
record and its report; `-v` or `--tb` bring them back), one progress line with items/s, the holes so far and an ETA
(rewritten in place on a terminal, a line per tenth in a CI log), and the matrix and totals last."""

from __future__ import annotations

import time
from typing import Any

import pytest

from .audit_cases import auditing


class Progress:
    """Items done of the total, their pace, and the holes so far."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.total = 0
        self.done = 0
        self.holes = 0
        self.written = -1.0  # when the line was last written
        self.tenth = 0  # the last tenth written, in a log

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-6)
        pace = self.done / elapsed
        left = (self.total - self.done) / pace if pace and self.total else 0.0
        eta = f", ETA {_duration(left)}" if self.done < self.total and self.done >= 2 else ""
        holes = f", {self.holes} failing" if self.holes else ", none failing"
        return f"audit: {self.done}/{self.total or '?'} items, {pace:.1f} items/s{holes}{eta}"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Quiet unless -v: no tracebacks unless --tb names a style, no FAILED line per hole after the matrix."""
    if not auditing(config) or config.get_verbosity() > 0:
        return
    if config.option.tbstyle == "auto":
        config.option.tbstyle = "no"
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:
        terminal.showfspath = False  # the module's name before each line of progress
        if config.option.reportchars == "fE":  # pytest's default: a FAILED line per hole
            terminal.reportchars = terminal.reportchars.replace("f", "").replace("E", "")
    config.pluginmanager.register(QuietAudit(config), "controlplane-quiet-audit")


class QuietAudit:
    """The hooks of a quiet audit run (registered only for one)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.progress = Progress()

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> Any:
        """The item's category counts and its word stays (for -r's lines); no letter is written."""
        status = yield
        return (status[0], "", status[2]) if status else status

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.progress.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, ids: list[str]) -> None:
        self.progress.total = len(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not (report.when == "call" or (report.when == "setup" and not report.passed)):
            return
        progress = self.progress
        progress.done += 1
        progress.holes += report.failed
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is None:
            return
        now = time.monotonic()
        if terminal.isatty():
            if now - progress.written >= 0.2 or progress.done == progress.total:
                progress.written = now
                terminal.rewrite(progress.line(now), erase=True)
        elif progress.total and progress.done * 10 // progress.total > progress.tenth:
            progress.tenth = progress.done * 10 // progress.total
            terminal.write_line(progress.line(now))

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if terminalreporter.isatty() and self.progress.done:
            terminalreporter.write_line("")  # past the progress line
