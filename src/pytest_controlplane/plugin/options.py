"""pytest wiring of the options, ini keys and markers (config.py says what each means), checked when pytest
configures; the `bypass_variants` marker's parametrization; and the explanation of a failed `not in effects`."""

from __future__ import annotations

import os
import sys

import pytest

from .. import config as settings_
from ..errors import ConfigError


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("controlplane", "pytest-controlplane: agent control-plane tests")
    for option in settings_.OPTIONS:
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
        "(write, read, exec, escape) against target; routes/forms/tags select, exclude "
        "drops ids, routes or tags; depth='full' takes every route x form. The "
        "`bypass_variants` fixture is the variant: agent_session.attempt(it).",
    )
    config.addinivalue_line(
        "markers",
        "agent_warm: the variants this test attempts play in a warm CLI, as bypass_variants tests and audit items do "
        "(the module --agent-audit-write writes carries it); ini agent_warm = false plays them cold.",
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
    except ConfigError as error:
        raise pytest.UsageError(str(error)) from None


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
