"""pytest wiring of the audit (`--agent-audit`): its items in each directory given, without a test of the user's,
their records on the reports, and at the end the matrix, its HTML page, the JSON and the regression module.  The
work happens in `audit/`."""

from __future__ import annotations

import dataclasses
import inspect
import types
from pathlib import Path
from typing import Any

import pytest

from ..errors import ConfigError
from .audit_cases import audit_cases, auditing, chosen_lines, clis, what_ifs
from .ci import control_plane_location, locator
from .keys import AGENT_FROM, AGENT_SNIPPET, AUDIT, AUDIT_WIRING, FIXTURES, agent_module
from .options import workspace_trust


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from .. import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_configure(config: pytest.Config) -> None:
    if auditing(config):
        audit_cases(config)  # a bad target or mode is a usage error before anything runs


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
    if not auditing(config):
        return []
    axis = [cli for cli in clis(config).values() if cli is not None]
    drift = ["each item on each CLI, for the drift between them:"] + [f"  {cli.describe()}" for cli in axis]
    return [*chosen_lines(config), *drift * bool(axis), *_settings_lines(config)]


def _settings_lines(config: pytest.Config) -> list[str]:
    """The trust view the audit plays (--workspace-trust), and what it found in each audited directory that has
    project settings: allow entries listed only where the CLI honours them in that view."""
    from ..agents.hook_needs import needs_lines
    from ..agents.settings_hooks import allow_in_force, project_settings, trust_line
    from ..agents.settings_summary import unaudited_plugins

    trust = workspace_trust(config)
    lines = [trust_line(trust)]
    for arg in config.args or ["."]:
        directory = Path(arg.split("::")[0])
        found = project_settings(directory) if directory.is_dir() else []
        if found:
            lines.append(f"settings in {arg}:")
            lines += [f"  {line.describe(allow_in_force=allow_in_force(directory, line, trust))}" for line in found]
            lines += [f"  {line}" for line in unaudited_plugins(directory, found)]
            lines += [f"  {line}" for line in needs_lines(directory, [h for f in found for h in f.hooks])]
    return lines


def test_audit(agent_session: Any, agent_audit_case: Any) -> None:
    """One audit case: a bypass variant (or the offered-tools sweep) of one target under one permission mode,
    played through this directory's `agent`; fails when it gets through.  An everyday task (work the control plane
    must allow) passes when done, and is an expected failure (xfail) when blocked: that does not fail the audit."""
    __tracebackhide__ = True
    from ..audit import attempt_case
    from ..audit.plan import EVERYDAY

    case = agent_audit_case
    try:
        outcome = attempt_case(agent_session, case.family, case.target, case.variant, case.column)
    except ConfigError as error:  # the same for every item: stop the audit with the fix
        pytest.exit(f"--agent-audit: {type(error).__name__}: {error}", returncode=pytest.ExitCode.USAGE_ERROR)
    if case.family != EVERYDAY:
        outcome.assert_held()
    elif outcome.verdict == "blocked":
        pytest.xfail(f"an everyday task was blocked (that alone does not fail the audit): {outcome.held_by}")
    else:
        outcome.assert_allowed()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "agent_audit_case" in metafunc.fixturenames:
        cases = audit_cases(metafunc.config)
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
        cli = clis(item.config)[case.cli].version if case.cli else ""
        what_if = case.column in what_ifs(item.config)
        records = of_item(case, item.nodeid, outcomes, report.outcome, why, path, location, locator(item), cli, what_if)
        report.user_properties.append((AUDIT, [dataclasses.asdict(r) for r in records]))
        report.user_properties.append((AGENT_FROM, _agent_from(item)))
    return report


def _agent_from(item: pytest.Item) -> str:
    """Where the item's agent came from, for the regression module: `settings DIR` (the audit's own agent, in a copy
    of DIR) or `conftest PATH` (the user's), as absolute paths."""
    if agent_module(item) == AUDIT_WIRING:
        return f"settings {Path(str(item.path)).resolve()}"
    defs = item._fixtureinfo.name2fixturedefs.get("agent")  # type: ignore[attr-defined]
    source = inspect.getsourcefile(inspect.unwrap(defs[-1].func)) if defs else None
    return f"conftest {Path(source).resolve()}" if source and Path(source).name == "conftest.py" else ""
