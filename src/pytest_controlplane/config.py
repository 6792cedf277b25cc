"""One place that resolves how an agent test runs.

Precedence, highest first: the test's ``@pytest.mark.agent(...)`` > the command line
(``--agent-mode``) > the environment (``CONTROLPLANE_MODE``) > the ini file (``agent_mode``) >
the default (``replay``).  Pytest-free: the plugin turns a `ConfigError` into its own errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError

MODES = ("replay", "record", "auto", "live")
DEFAULT_MODE = "replay"
MODE_ENV = "CONTROLPLANE_MODE"
# How the CLI sees the workspace (`--workspace-trust`, agents/world.py `seed_trust`): as its owner (`permissions.allow`
# in force), or as a fresh clone nobody trusted (the CLI ignores them and asks): the view a poisoned repository meets.
WORKSPACE_TRUST = ("owner", "clone")  # the first is the default
UPSTREAM_ENV = "CONTROLPLANE_UPSTREAM"
MARKER_SIGNATURE = (
    "agent(cassette=None, mode=None, script=None, allow_unused=False, timeout=None, workspace=None, "
    "record_errors=False, network=False, cli=None)"
)
BYPASS_SIGNATURE = (
    "bypass_variants(family, target=None, routes=None, forms=None, tags=None, exclude=None, depth='curated')"
)
BYPASS_KEYS = ("target", "routes", "forms", "tags", "exclude", "depth")
MARKER_KEYS = ("cassette", "mode", "script", "allow_unused", "timeout", "workspace", "record_errors", "network", "cli")


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """How one agent test runs, resolved once."""

    mode: str
    cassette: Path
    script: Any = None
    allow_unused: bool = False
    record_errors: bool = False  # store an upstream error answer as the recording (a test of error handling)
    timeout: float | None = None  # seconds per run from the marker
    default_timeout: float | None = None  # from the ini option agent_timeout
    workspace_template: Path | None = None  # from the marker, relative to the test file
    network: bool = False  # each run in a world network of its own (marker, else the ini option agent_network)
    cli: str | Path | None = None  # the marker's Claude Code CLI (clis/choice.py), a path relative to the test file


def check_mode(value: str, origin: str) -> str:
    if value not in MODES:
        raise ConfigError(f"{origin}: unknown agent mode {value!r}; valid modes: {', '.join(MODES)}.")
    return value


def resolve_mode(*, marker: str | None, cli: str | None, env: str | None, ini: str | None) -> str:
    for value, origin in (
        (marker, "@pytest.mark.agent(mode=...)"),
        (cli, "--agent-mode"),
        (env, f"${MODE_ENV}"),
        (ini, "ini option agent_mode"),
    ):
        if value:
            return check_mode(value, origin)
    return DEFAULT_MODE


def marker_kwargs(args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Validate the arguments of @pytest.mark.agent."""
    if args:
        raise ConfigError(
            f"@pytest.mark.agent takes keyword arguments only: {MARKER_SIGNATURE}; got positional {args!r}."
        )
    unknown = sorted(set(kwargs) - set(MARKER_KEYS))
    if unknown:
        raise ConfigError(
            f"@pytest.mark.agent got unknown argument(s) {', '.join(unknown)}; accepted: "
            f"{', '.join(MARKER_KEYS)} — {MARKER_SIGNATURE}."
        )
    takes = {"cassette": "a path", "workspace": "a path", "cli": "a version, latest, bundled, system or a path"}
    for key, what in takes.items():
        if key in kwargs and not isinstance(kwargs[key], str | Path):
            raise ConfigError(f"@pytest.mark.agent({key}=...) takes {what}, got {kwargs[key]!r}.")
    for key in ("allow_unused", "record_errors", "network"):
        if key in kwargs and not isinstance(kwargs[key], bool):
            raise ConfigError(f"@pytest.mark.agent({key}=...) takes True or False, got {kwargs[key]!r}.")
    if "timeout" in kwargs and not (isinstance(kwargs["timeout"], int | float) and kwargs["timeout"] > 0):
        raise ConfigError(
            f"@pytest.mark.agent(timeout=...) takes seconds (a positive number), got {kwargs['timeout']!r}."
        )
    return dict(kwargs)


def check_choice(value: str, choices: tuple[str, ...], origin: str) -> str:
    """An ini value that must be one of `choices` (empty: unset)."""
    if value and value not in choices:
        raise ConfigError(f"{origin}: {value!r} is not one of {', '.join(choices)}.")
    return value


def resolve_workspace_trust(*, cli: str | None = None, ini: str | None = None) -> str:
    """--workspace-trust > ini workspace_trust > "owner"; a value that is not a view is an error naming the views."""
    found = check_choice(cli or "", WORKSPACE_TRUST, "--workspace-trust")
    return found or check_choice(ini or "", WORKSPACE_TRUST, "ini option workspace_trust") or WORKSPACE_TRUST[0]


def parse_timeout(value: str, origin: str) -> float | None:
    """The ini option agent_timeout: seconds, a positive number (empty means unset)."""
    if not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        raise ConfigError(f"{origin}: agent_timeout takes seconds (a positive number), got {value!r}.")
    return seconds


def check_run_options(
    *, env_mode: str | None, ini_mode: str, ini_timeout: str, ini_inconclusive: str, ini_approval: str, ini_trust: str
) -> None:
    """The options that hold for the whole run, checked once at start-up (a bad one is a usage error)."""
    for value, origin in ((env_mode, f"${MODE_ENV}"), (ini_mode, "ini option agent_mode")):
        if value:
            check_mode(value, origin)
    parse_timeout(ini_timeout, "ini option agent_timeout")
    check_choice(ini_inconclusive, ("fail", "warn"), "ini option agent_inconclusive")
    check_choice(ini_approval, ("deny", "allow"), "ini option agent_approval")
    check_choice(ini_trust, WORKSPACE_TRUST, "ini option workspace_trust")  # checked even when the flag wins


def cassette_name(module_path: str, test_name: str) -> Path:
    """`<module path without .py>/<test name>.yaml`, with the test name made file-safe."""
    safe = re.sub(r"[^A-Za-z0-9_.\-\[\]]+", "-", test_name).strip("-") or "test"
    return Path(module_path).with_suffix("") / f"{safe}.yaml"


def resolve(
    *,
    marker_args: Sequence[Any] = (),
    marker: Mapping[str, Any],
    cli_mode: str | None,
    env_mode: str | None,
    ini_mode: str | None,
    cassette_dir: Path,
    test_dir: Path,
    module_path: str,
    test_name: str,
    ini_timeout: str = "",
    ini_network: bool = False,
) -> RunSettings:
    given = marker_kwargs(marker_args, marker)
    mode = resolve_mode(marker=given.get("mode"), cli=cli_mode, env=env_mode, ini=ini_mode)
    if given.get("cassette"):
        cassette = test_dir / given["cassette"]
    else:
        cassette = cassette_dir / cassette_name(module_path, test_name)
    return RunSettings(
        mode=mode,
        cassette=cassette,
        script=given.get("script"),
        allow_unused=given.get("allow_unused", False),
        record_errors=given.get("record_errors", False),
        timeout=given.get("timeout"),
        default_timeout=parse_timeout(ini_timeout, "ini option agent_timeout"),
        workspace_template=test_dir / given["workspace"] if given.get("workspace") else None,
        network=given.get("network", ini_network),
        cli=str(test_dir / given["cli"]) if "/" in str(given.get("cli", "")) else given.get("cli"),
    )
