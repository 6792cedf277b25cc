"""pytest wiring of what each agent test leaves: its numbers on its report (so xdist brings them home), its cassette,
an HTML report for a failure (or --agent-report), and at the end one line per agent test with the totals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .audit_cases import auditing, out_dir
from .keys import CALL_FAILED, SETTINGS


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    from ..report.terminal import CASSETTE

    report = yield
    if report.when == "call" and report.failed:
        item.stash[CALL_FAILED] = True
    funcargs = getattr(item, "funcargs", {})
    gateway = funcargs.get("model_gateway")
    if report.when == "call" and gateway is not None and gateway.cassette_path is not None:
        report.user_properties.append((CASSETTE, str(gateway.cassette_path)))
    session = funcargs.get("agent_session")
    if report.when == "call" and session is not None and not isinstance(session, BaseException):
        report_agent_test(item, report, session, item.stash[SETTINGS].mode if SETTINGS in item.stash else "")
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line per agent test (turns, tokens, cassette hits/misses/unused, mode), and the totals."""
    from ..report.terminal import Tally

    if auditing(config) and config.get_verbosity() <= 0:
        return  # the audit's matrix says it all (-v: this table too)
    tally = Tally.of(report for reports in terminalreporter.stats.values() for report in reports)
    if not tally:
        return
    whole_suite = not terminalreporter.stats.get("deselected") and not config.option.file_or_dir
    cassette_dir = config.rootpath / (config.getoption("agent_cassette_dir") or config.getini("agent_cassette_dir"))
    terminalreporter.section("agent tests (pytest-controlplane)")
    for line in tally.lines(
        verbose=config.getoption("verbose") > 0,
        routes=config.getoption("agent_routes"),
        cassette_dir=cassette_dir if whole_suite else None,
        root=config.rootpath,
    ):
        terminalreporter.write_line(line)


def report_agent_test(item: pytest.Item, report: pytest.TestReport, session: Any, mode: str) -> None:
    """The test's numbers ride on its report (so xdist brings them home); a failure (or --agent-report) gets
    an HTML report, named in the failure's output."""
    from .. import report as reports
    from ..report.terminal import REPORT, properties

    config = item.config
    report.user_properties += properties(session, mode=mode)
    chosen = config.getoption("agent_report") or config.getini("agent_report")
    if not (chosen or report.failed):
        return
    default = out_dir(config) / "reports" if auditing(config) else config.rootpath / "controlplane-report"
    directory = Path(chosen) if chosen else default
    if not directory.is_absolute():
        directory = config.rootpath / directory
    data = reports.collect(
        session,
        test=item.nodeid,
        outcome=report.outcome,
        failure=report.longreprtext,
        mode=mode,
        canaries=session.plantings.canaries,
    )
    path = reports.write(directory, data)
    report.sections.append(("controlplane report", f"Agent report: {path}"))
    report.user_properties.append((REPORT, str(path)))
    html = config.pluginmanager.getplugin("html")
    if html is not None:  # pytest-html: link it from there too
        extras = getattr(report, "extras", [])
        extras.append(html.extras.url(path.as_uri(), name="agent report"))
        report.extras = extras  # type: ignore[attr-defined]  # pytest-html's own attribute, not in TestReport
