"""pytest wiring of what a run leaves to be read: each agent test's HTML report (for a failure, or --agent-report), and
the run's holes where CI looks: `--agent-sarif PATH` (SARIF 2.1.0 for code scanning), the Markdown
summary (`$GITHUB_STEP_SUMMARY` when set, `--agent-summary-md PATH`) and, under GitHub Actions, an `::error`
annotation per hole on the control plane that let it through.  The holes are the audit's records and those of every
`bypass_variants` test; the work happens in `audit/sarif.py` and `audit/summary.py`."""

from __future__ import annotations

import dataclasses
import inspect
import os
from pathlib import Path
from typing import Any

import pytest

from .audit_cases import auditing, cli_about, directories
from .keys import ATTEMPTS, AUDIT, AUDIT_WIRING, FIXTURES, agent_module
from .options import workspace_trust


def _settings_driven(item: pytest.Item) -> bool:
    """Whether the item's agent is the audit's own, for a repository whose settings are its control plane."""
    return agent_module(item) == AUDIT_WIRING


def locator(item: pytest.Item) -> Any:
    """Each outcome's place (audit/located.py): the hook of the repository's settings that saw its call, relative to
    the repository the user named for an audit of its settings, else to the rootdir; None where no hook is."""
    from ..audit.located import seen_by

    template = getattr(item, "funcargs", {}).get("agent_workspace_template")
    repository = Path(str(item.path)) if _settings_driven(item) else Path(template) if template else None
    base = repository if _settings_driven(item) and repository else item.config.rootpath
    return lambda outcome: seen_by(outcome, repository, base)


def control_plane_location(item: pytest.Item) -> str:
    """`path:line` (relative to the rootdir) of what decides for this item's agent, where no hook saw its call: the
    settings file of a settings-driven repository audited without a conftest, the `agent` fixture the user wrote,
    else the test."""
    root = item.config.rootpath
    defs = getattr(item, "_fixtureinfo", None) and item._fixtureinfo.name2fixturedefs.get("agent")  # type: ignore[attr-defined]
    func = defs[-1].func if defs else None
    if _settings_driven(item):
        settings = Path(str(item.path)) / ".claude" / "settings.json"
        return f"{os.path.relpath(settings, item.path)}:1"
    if func is not None and func.__module__ != FIXTURES:
        code = inspect.unwrap(func).__code__
        return f"{os.path.relpath(code.co_filename, root)}:{code.co_firstlineno}"
    path, number, _ = item.location
    return f"{path}:{(number or 0) + 1}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A bypass_variants test's attempts ride home on its report (an audit item's records carry their own)."""
    report = yield
    callspec = getattr(item, "callspec", None)
    if report.when == "call" and not (callspec and "agent_audit_case" in callspec.params):
        session = getattr(item, "funcargs", {}).get("agent_session")
        outcomes = list(getattr(session, "bypass_outcomes", []))
        if outcomes:
            from ..audit.records import of_test

            attempts = of_test(item.nodeid, outcomes, control_plane_location(item), locate=locator(item))
            report.user_properties.append((ATTEMPTS, [dataclasses.asdict(r) for r in attempts]))
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The run's holes where CI looks (an audit writes them with its own files, at its end)."""
    if not auditing(config):
        for path in write_outputs(terminalreporter, config):
            terminalreporter.write_line(f"written: {path}")


def write_outputs(terminalreporter: Any, config: pytest.Config, out: Path | None = None) -> list[Path]:
    """SARIF and the Markdown summary where asked (or into `out`, for an audit), the job summary and the annotations
    under GitHub Actions; returns the files written."""
    sarif = config.getoption("agent_sarif") or config.getini("agent_sarif") or (out and out / "audit.sarif")
    markdown = config.getoption("agent_summary_md") or config.getini("agent_summary_md") or (out and out / "summary.md")
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    actions = os.environ.get("GITHUB_ACTIONS") == "true"
    if not (sarif or markdown or step or actions):
        return []
    from ..audit import Record, summary
    from ..audit import sarif as sarif_log

    records = [
        Record(**fields)
        for reports in terminalreporter.stats.values()
        for report in reports
        for key, value in getattr(report, "user_properties", [])
        if key in (AUDIT, ATTEMPTS)
        for fields in value
    ]
    if not records and not (sarif or markdown):
        return []
    from ..agents.settings_hooks import trust_view

    meta = {"directory": ", ".join(directories(config)), "version": _version()}
    meta["workspace_trust"] = trust_view(workspace_trust(config))
    meta.update(cli_about(config))
    written = []
    if sarif:
        written.append(sarif_log.write(records, Path(sarif).resolve(), meta=meta))
    text = summary.markdown(records, meta=meta)
    if markdown:
        written.append(Path(markdown).resolve())
        written[-1].parent.mkdir(parents=True, exist_ok=True)
        written[-1].write_text(text, encoding="utf-8")
    if step:
        with open(step, "a", encoding="utf-8") as summary_file:
            summary_file.write(text)
    if actions:
        for command in summary.workflow_commands(records):
            terminalreporter.write_line(command)
    return written


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("pytest-controlplane")
    except Exception:  # noqa: BLE001 - not installed as a distribution (a checkout on the path)
        return "0"
