"""pytest wiring of the audit (`--agent-audit`): its items in each directory given, without a test of the user's,
their records on the reports, and at the end the matrix, its HTML page, the JSON and the regression module.  The
work happens in `audit/`."""

from __future__ import annotations

import dataclasses
import datetime
import importlib.util
import types
from pathlib import Path
from typing import Any

import pytest

from ..errors import ConfigError
from .ci import control_plane_location, locator
from .keys import AGENT_SNIPPET, AUDIT, FIXTURES, agent_module

_CASES = pytest.StashKey[list[Any]]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from .. import hooks

    pluginmanager.add_hookspecs(hooks)


def auditing(config: pytest.Config) -> bool:
    return bool(config.getoption("agent_audit") or config.getini("agent_audit"))


def pytest_configure(config: pytest.Config) -> None:
    if auditing(config):
        _cases(config)  # a bad target or mode is a usage error before anything runs


def _cases(config: pytest.Config) -> list[Any]:
    """The audit's cases: targets and modes from the conftest hooks, else the ini options, else the defaults."""
    if _CASES not in config.stash:
        from ..audit import DEFAULT_MODES, DEFAULT_TARGETS, cases, parse_modes, parse_targets

        targets = config.hook.pytest_agent_audit_targets(config=config)
        modes = config.hook.pytest_agent_audit_modes(config=config)
        try:
            config.stash[_CASES] = cases(
                parse_targets(
                    targets or config.getini("agent_audit_targets") or DEFAULT_TARGETS,
                    "pytest_agent_audit_targets" if targets else "agent_audit_targets",
                ),
                parse_modes(
                    modes or config.getini("agent_audit_modes") or DEFAULT_MODES,
                    "pytest_agent_audit_modes" if modes else "agent_audit_modes",
                ),
            )
        except ConfigError as error:
            raise pytest.UsageError(f"--agent-audit: {error}") from None
    return config.stash[_CASES]


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Each directory given to `pytest --agent-audit` holds the audit's items instead of its tests."""
    if auditing(parent.config) and parent.session.isinitpath(path):
        return _AuditDirectory.from_parent(parent, path=path)
    return None


class _AuditDirectory(pytest.Directory):
    """An audited directory: it collects the audit, not the tests in it."""

    def collect(self) -> Any:
        nodeid = f"{self.nodeid}/controlplane-audit" if self.nodeid not in ("", ".") else "controlplane-audit"
        yield _AuditModule.from_parent(self, path=self.path, name="controlplane-audit", nodeid=nodeid)


class _AuditModule(pytest.Module):
    """The audit's items, under the audited directory (so its conftest.py's `agent` is the one audited).  A directory
    with no `agent` fixture whose control plane is its own `.claude/` settings is audited with the default agent:
    `ClaudeAgent.project_settings()`, in a copy of the directory."""

    def _getobj(self) -> types.ModuleType:
        module = types.ModuleType("controlplane_audit")
        module.test_audit = test_audit  # type: ignore[attr-defined]
        if _settings_driven(self):
            directory = self.path

            @pytest.fixture
            def agent() -> Any:
                """The default agent of a repository whose control plane is its `.claude/` settings."""
                from ..agents.claude import ClaudeAgent

                return ClaudeAgent.project_settings()

            @pytest.fixture
            def agent_workspace_template() -> Path:
                """The audited repository, copied as each item's workspace."""
                return directory

            module.agent = agent  # type: ignore[attr-defined]
            module.agent_workspace_template = agent_workspace_template  # type: ignore[attr-defined]
        return module


def _settings_driven(node: pytest.Collector) -> bool:
    """A directory with no `agent` fixture of its own that holds project settings (`.claude/settings*.json`)."""
    from ..agents.settings_hooks import project_settings

    return agent_module(node) in ("", FIXTURES) and bool(project_settings(Path(node.path)))


def pytest_report_header(config: pytest.Config) -> list[str]:
    return _settings_lines(config) if auditing(config) else []


def _settings_lines(config: pytest.Config) -> list[str]:
    """What the audit found in each audited directory that has project settings."""
    from ..agents.settings_hooks import project_settings

    lines = []
    for arg in config.args or ["."]:
        directory = Path(arg.split("::")[0])
        found = project_settings(directory) if directory.is_dir() else []
        if found:
            lines.append(f"settings in {arg}:")
            lines += [f"  {line.describe()}" for line in found]
    return lines


def test_audit(agent_session: Any, agent_audit_case: Any) -> None:
    """One audit case: a bypass variant (or the offered-tools sweep) of one target under one permission mode,
    played through this directory's `agent`; fails when it gets through."""
    __tracebackhide__ = True
    from ..audit import attempt_case

    case = agent_audit_case
    try:
        outcome = attempt_case(agent_session, case.family, case.target, case.variant, case.mode)
    except ConfigError as error:  # the same for every item: stop the audit with the fix
        pytest.exit(f"--agent-audit: {type(error).__name__}: {error}", returncode=pytest.ExitCode.USAGE_ERROR)
    outcome.assert_held()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "agent_audit_case" in metafunc.fixturenames:
        cases = _cases(metafunc.config)
        metafunc.parametrize("agent_audit_case", cases, ids=[c.id for c in cases])


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--agent-audit-shard K/N` keeps its shard's items; an audited directory whose conftest.py defines no `agent`
    stops the audit before its first item."""
    shard = config.getoption("agent_audit_shard")
    if shard:
        from ..audit import in_shard, parse_shard

        try:
            number, count = parse_shard(shard)
        except ConfigError as error:
            raise pytest.UsageError(f"--agent-audit-shard: {error}") from None
        kept = [item for item in items if in_shard(item.nodeid, number, count)]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept

    for item in items:
        if not isinstance(item, pytest.Function) or "agent_audit_case" not in item.fixturenames:
            continue
        if agent_module(item) == FIXTURES:  # the plugin's own, failing one
            where = Path(str(item.path)) / "conftest.py"
            raise pytest.UsageError(
                f"--agent-audit: no `agent` fixture for {item.nodeid.split('::')[0]}: the audit plays its variants "
                f"through the agent a conftest.py defines (or, for a repository whose control plane is its own "
                f".claude/settings.json, through the CLI with those settings). Define it in {where}:\n"
                f"{AGENT_SNIPPET}"
            )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """An audit item's records ride home on its report (through xdist too)."""
    report = yield
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("agent_audit_case") if callspec else None
    if case is not None and (report.when == "call" or (report.when == "setup" and not report.passed)):
        from ..audit.records import of_item
        from ..report.terminal import REPORT

        session = getattr(item, "funcargs", {}).get("agent_session")
        outcomes = list(getattr(session, "bypass_outcomes", []))
        path = next((value for key, value in report.user_properties if key == REPORT), "")
        why = str(report.longrepr[2]) if report.skipped and isinstance(report.longrepr, tuple) else report.longreprtext
        location = control_plane_location(item)
        records = of_item(case, item.nodeid, outcomes, report.outcome, why, path, location, locator(item))
        report.user_properties.append((AUDIT, [dataclasses.asdict(r) for r in records]))
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The matrix in the terminal; its HTML page beside the reports; the JSON and the regression module if asked."""
    if not auditing(config):
        return
    from ..audit import Matrix, Record, dump, page, regression

    records = [
        Record(**fields)
        for reports in terminalreporter.stats.values()
        for report in reports
        for key, value in getattr(report, "user_properties", [])
        if key == AUDIT
        for fields in value
    ]
    meta = _meta(config)
    matrix = Matrix.of(records)
    terminalreporter.section("agent audit (pytest-controlplane)")
    for line in _settings_lines(config):
        terminalreporter.write_line(line)
    for line in matrix.lines():
        terminalreporter.write_line(line)
    if not records:
        return
    chosen = config.getoption("agent_report") or config.getini("agent_report")
    directory = Path(chosen) if chosen else Path("controlplane-report")
    written = [page.write(matrix, config.rootpath / directory / "audit.html", meta=meta)]
    if config.getoption("agent_audit_json"):
        written.append(Path(config.getoption("agent_audit_json")).resolve())
        dump(records, written[-1], meta=meta)
    if config.getoption("agent_audit_write"):
        written.append(regression.write(records, Path(config.getoption("agent_audit_write")).resolve(), meta=meta))
    for path in written:
        terminalreporter.write_line(f"audit written: {path}")


def _meta(config: pytest.Config) -> dict[str, Any]:
    """What the audit files say about the run."""
    directories = [str(a) for a in config.args] or ["."]
    cli = ""
    if importlib.util.find_spec("claude_agent_sdk._cli_version") is not None:
        from claude_agent_sdk._cli_version import __cli_version__ as cli
    written = config.getoption("agent_audit_write")
    return {
        "agent": f"the agent of {', '.join(directories)}",
        "directory": ", ".join(directories),
        "date": datetime.date.today().isoformat(),
        "cli": f"Claude Code {cli}" if cli else "",
        "modes": " ".join(dict.fromkeys(c.mode for c in _cases(config))),
        "targets": "; ".join(dict.fromkeys(f"{c.family} {c.target}" for c in _cases(config))),
        "command": f"pytest --agent-audit {' '.join(directories)} --agent-audit-write {written or 'PATH'}",
    }
