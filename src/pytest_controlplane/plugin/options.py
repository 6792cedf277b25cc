"""pytest wiring of the options, ini keys and markers (config.py says what each means), checked when pytest
configures; the Claude Code CLI the run chose (`--agent-cli`), resolved then (one UnmeasuredCLI warning when it is a
release the plugin's facts were not measured on) and named in the header; the `bypass_variants` marker's
parametrization; and the explanation of a failed `not in effects`."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from .. import config as settings_
from .. import flags
from ..errors import ConfigError

CLI_ENV = "CONTROLPLANE_CLI"
_CLI = pytest.StashKey[Any]()  # the run's --agent-cli (or ini agent_cli), resolved: a clis.choice.Cli
_WORKER_CLI = "controlplane_cli"  # the controller's choice, as an xdist worker gets it: (choice, chosen by)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("controlplane", "pytest-controlplane: agent control-plane tests")
    for option in flags.OPTIONS:
        if option.help:
            group.addoption(f"--{option.name.replace('_', '-')}", dest=option.name, help=option.help, **option.flag)
        if option.ini_help:
            parser.addini(option.name, option.ini_help, type=option.ini_type, default=option.ini_default)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{settings_.MARKER_SIGNATURE}: how this test's agent gets model answers: "
        "its cassette path (relative to the test file), a mode that overrides "
        "--agent-mode, a scripted model (list of turns or function of the request), "
        "whether unplayed interactions are allowed, seconds per run, and a folder "
        "(relative to the test file) the workspace starts as a copy of.",
    )
    config.addinivalue_line(
        "markers",
        f"{settings_.BYPASS_SIGNATURE}: run the test once per variant of a bypass family "
        "(write, read, exec, escape, egress; `everyday`: the work a guard must allow, no target) against target; "
        "routes/forms/tags select, exclude drops ids, routes or tags; depth='full' takes every route x form. The "
        "`bypass_variants` fixture is the variant: agent_session.attempt(it).",
    )
    config.addinivalue_line(
        "markers",
        "agent_warm: the variants this test attempts play in a warm CLI, as bypass_variants tests and audit items do "
        "(the module --agent-audit-write writes carries it); ini agent_warm = false plays them cold.",
    )
    config.addinivalue_line(
        "markers",
        "hook_fault(fault): every run of this test with one command hook of the workspace's settings made to fail, "
        "'KIND:HOOK' (exit-1:1, invalid-json:2, timeout:1, huge-stdout:1, not-executable:1, missing-script:1) or "
        "'missing:PROGRAM:HOOK' (missing:jq:1); HOOK numbers the PreToolUse command hooks from 1. Played cold.",
    )
    try:
        settings_.check_run_options(
            env_mode=os.environ.get(settings_.MODE_ENV),
            ini_mode=config.getini("agent_mode"),
            ini_timeout=config.getini("agent_timeout"),
            ini_inconclusive=config.getini("agent_inconclusive"),
            ini_approval=config.getini("agent_approval"),
            ini_trust=config.getini("workspace_trust"),
        )
        _choose_cli(config)
    except ConfigError as error:
        raise pytest.UsageError(str(error)) from None
    _warn_if_unmeasured(config)


def _choose_cli(config: pytest.Config) -> None:
    """--agent-cli, else $CONTROLPLANE_CLI, else ini agent_cli (a path relative to the ini file), resolved once
    before any test runs: a release not in the cache is installed here, so xdist workers, configured after, find it
    there; a worker runs the CLI the controller chose (`latest` is one version for the whole run)."""
    from ..clis.choice import choose

    flag, ini = config.getoption("agent_cli"), config.getini("agent_cli").strip()
    if _WORKER_CLI in getattr(config, "workerinput", {}):
        config.stash[_CLI] = choose(*config.workerinput[_WORKER_CLI])  # type: ignore[attr-defined]
    elif flag:
        config.stash[_CLI] = choose(flag, "--agent-cli")
    elif env := os.environ.get(CLI_ENV, "").strip():  # a whole suite on another CLI, its pytester runs too
        config.stash[_CLI] = choose(env, f"${CLI_ENV}")
    elif ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        config.stash[_CLI] = choose(str(base / ini) if "/" in ini else ini, "ini option agent_cli")


def _warn_if_unmeasured(config: pytest.Config) -> None:
    """One UnmeasuredCLI warning for a run whose CLI is a release the plugin's facts were not measured on, said as the
    run is configured (with or without a header) by the controller only: an xdist worker runs the same CLI."""
    from ..cli_facts import UnmeasuredCLI, outside_measured

    if hasattr(config, "workerinput"):
        return
    cli = run_cli(config)
    if cli is not None and (off := outside_measured(cli.version)):
        config.issue_config_time_warning(UnmeasuredCLI(off), stacklevel=2)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """An xdist worker is told the CLI the controller chose."""
    chosen = chosen_cli(node.config)
    if chosen is not None:
        node.workerinput[_WORKER_CLI] = (chosen.choice, chosen.chosen_by)


def chosen_cli(config: pytest.Config) -> Any:
    """The Claude Code CLI the run chose (--agent-cli, ini agent_cli), or None: each agent's own, else the default."""
    return config.stash.get(_CLI, None)


def run_cli(config: pytest.Config) -> Any:
    """The CLI the run names (header, audit files, SARIF): the one it chose, else the default; None when there is
    none (no claude-agent-sdk, no `claude` on PATH: the run has no Claude agent)."""
    from ..clis.choice import default

    try:
        return chosen_cli(config) or default()
    except ConfigError:
        return None


def cli_meta(config: pytest.Config) -> dict[str, str]:
    """What the run's files say of its CLI: a line to read, and its version, path and source apart."""
    cli = run_cli(config)
    if cli is None:
        return {}
    return {"cli": cli.describe(), "cli_version": cli.version, "cli_path": cli.path, "cli_source": cli.source,
            "cli_choice": cli.choice}  # fmt: skip


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The CLI a ClaudeAgent runs, and who chose it (a release the plugin's facts were not measured on is said as
    the run is configured: _warn_if_unmeasured)."""
    cli = run_cli(config)
    if cli is None:
        return []
    if chosen_cli(config) is None:
        why = "an agent's own cli= or cli_path wins over it; --agent-cli VERSION|PATH|bundled|system over both"
    else:
        why = "it wins over an agent's own cli= or cli_path; a test's @pytest.mark.agent(cli=...) wins over it"
    return [f"claude cli: {cli.describe()}", f"  {why}"]


def workspace_trust(config: pytest.Config) -> str:
    """The trust view this run plays (--workspace-trust, ini workspace_trust): "owner" or "clone"."""
    return settings_.resolve_workspace_trust(
        cli=config.getoption("workspace_trust"), ini=config.getini("workspace_trust")
    )


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: object, right: object) -> list[str] | None:
    """`assert ".env" not in agent_session.effects` explains every change that reached the file."""
    oracle = sys.modules.get("pytest_controlplane.effects.oracle")
    if oracle is None or op != "not in" or not isinstance(right, oracle.Effects):
        return None
    if not isinstance(left, str | os.PathLike):
        return None
    return [f"{os.fspath(left)!r} not in effects", *right.explain(left).splitlines()]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`@pytest.mark.bypass_variants(...)`: one test per variant, with the variant's id."""
    if "bypass_variants" not in metafunc.fixturenames:
        return
    from ..bypass.corpus import variants_for_marker

    marker = metafunc.definition.get_closest_marker("bypass_variants")
    variants = (
        variants_for_marker(marker.args, marker.kwargs)
        if marker
        else [
            ConfigError(
                "The bypass_variants fixture needs the marker: @pytest.mark.bypass_variants('write', target='.env')."
            )
        ]
    )
    ids = [
        v.id if not isinstance(v, ConfigError) else "no-marker" if marker is None else "invalid-marker"
        for v in variants
    ]
    metafunc.parametrize("bypass_variants", variants, indirect=True, ids=ids)
