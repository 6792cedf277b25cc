"""pytest wiring of what an audit tries: its targets, modes, families and route classes from the command line, the
conftest hooks, the ini options or the audited repository itself, and the lines that say which were chosen and why.
The work happens in `audit/plan.py` and `audit/targets.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..errors import ConfigError

_CASES = pytest.StashKey[list[Any]]()
_WHY = pytest.StashKey[list[str]]()
_TARGETS = pytest.StashKey[tuple[list[str], str]]()
_WORDS = pytest.StashKey[bool]()
_CLIS = pytest.StashKey[dict[str, Any]]()
_WHAT_IFS = pytest.StashKey[set[str]]()  # the drift axis: each case's cli (a CLI's choice) -> its clis.choice.Cli


def auditing(config: pytest.Config) -> bool:
    return bool(config.getoption("agent_audit") or config.getini("agent_audit"))


def directories(config: pytest.Config) -> list[str]:
    """The audited directories, as given."""
    return [str(a).split("::")[0] for a in config.args] or ["."]


def audit_cases(config: pytest.Config) -> list[Any]:
    """The audit's cases, chosen once (a bad target, mode, family or class is a usage error before anything runs)."""
    if _CASES not in config.stash:
        from ..audit.plan import cases, parse_modes, parse_targets, select

        try:
            lines, origin = _targets(config)
            values, mode_origin = _modes(config)
            targets = parse_targets(lines, origin)
            config.stash[_CASES] = select(
                cases(
                    targets,
                    parse_modes(values, mode_origin),
                    *_axes(config),
                    words=_words(config, targets),
                    faults=_faults(config),
                ),  # fmt: skip
                families=config.getoption("agent_audit_family") or (),
                routes=config.getoption("agent_audit_route") or (),
                quick=config.getoption("agent_audit_quick"),
            )
        except ConfigError as error:
            raise pytest.UsageError(f"--agent-audit: {error}") from None
    return config.stash[_CASES]


def full_cases(config: pytest.Config) -> list[Any]:
    """What the audit without --agent-audit-quick and --agent-audit-mode plays: every spelling, every mode."""
    from ..audit.plan import cases, parse_modes, parse_targets, select

    lines, origin = _targets(config)
    targets = parse_targets(lines, origin)
    return select(
        cases(
            targets,
            parse_modes(*_configured_modes(config)),
            *_axes(config),
            words=_words(config, targets),
            faults=_faults(config),
        ),  # fmt: skip
        families=config.getoption("agent_audit_family") or (),
        routes=config.getoption("agent_audit_route") or (),
    )


def chosen_lines(config: pytest.Config) -> list[str]:
    """Which targets the audit chose, and why (for the header)."""
    audit_cases(config)
    return config.stash.get(_WHY, [])


def _targets(config: pytest.Config) -> tuple[list[str], str]:
    """The "family target" lines chosen (`_chosen_targets`), and those the sandbox axis brings (the workspace left,
    the home directory's secrets read, the network reached), said once in the header."""
    if _TARGETS not in config.stash:
        from ..audit.egress_targets import sandbox_targets

        lines, origin = _chosen_targets(config)
        lines = _with_everyday(config, lines)
        brought = [d for d in sandbox_targets() if d.line not in lines] if _sandboxes(config) != [""] else []
        if brought:
            config.stash[_WHY] = [*config.stash.get(_WHY, []), f"targets the sandbox axis brings: {brought[0].why}:"]
            config.stash[_WHY] += [f"  {d.line}" for d in brought]
        config.stash[_TARGETS] = ([*lines, *(d.line for d in brought)], origin)
    return config.stash[_TARGETS]


def _with_everyday(config: pytest.Config, lines: list[str]) -> list[str]:
    """The target lines and `everyday` (the work a guard must allow), said once in the header; not when a line names
    it already, nor when --agent-audit-family leaves its family out."""
    from ..audit.plan import EVERYDAY, EVERYDAY_WHY

    families = config.getoption("agent_audit_family") or ()
    if (families and EVERYDAY not in families) or any(str(line).split()[:1] == [EVERYDAY] for line in lines):
        return lines
    config.stash[_WHY] = [
        *config.stash.get(_WHY, []),
        f"{EVERYDAY} (beside the targets): {EVERYDAY_WHY}; --family without {EVERYDAY} leaves it out",
    ]
    return [*lines, EVERYDAY]


def _words(config: pytest.Config, targets: list[tuple[str, str]]) -> list[str]:
    """The words the audited directories' guards let through whole, each ridden out by a `piggyback:<word>` variant
    of every egress target (none without one)."""
    from ..audit.egress_targets import allow_words
    from ..audit.plan import rideable

    if not any(family == "egress" for family, _ in targets):
        return []
    found: dict[str, str] = {}
    for directory in directories(config):
        for word in allow_words(Path(directory)) if Path(directory).is_dir() else []:
            found.setdefault(word.line, word.why if rideable(word.line) else f"{word.why} (not ridden: no one word)")
    if found and _WORDS not in config.stash:
        config.stash[_WORDS] = True
        config.stash[_WHY] = [*config.stash.get(_WHY, []), "words the guard lets through, ridden out (piggyback):"]
        config.stash[_WHY] += [f"  {word:<24}  {why}" for word, why in found.items()]
    return [word for word, why in found.items() if not why.endswith("(not ridden: no one word)")]


def _chosen_targets(config: pytest.Config) -> tuple[list[str], str]:
    """The "family target" lines: --agent-audit-target > the conftest hook > the ini option > what the audited
    directories have > the defaults."""
    from ..audit.plan import DEFAULT_TARGETS
    from ..audit.targets import derive

    given = config.getoption("agent_audit_target")
    if given:
        return list(given), "--agent-audit-target"
    hooked = config.hook.pytest_agent_audit_targets(config=config)
    if hooked:
        return list(hooked), "pytest_agent_audit_targets"
    ini = config.getini("agent_audit_targets")
    if ini:
        return list(ini), "agent_audit_targets"
    found: dict[str, list[str]] = {}
    several = len(directories(config)) > 1
    for directory in directories(config):
        for derived in derive(Path(directory)) if Path(directory).is_dir() else []:
            found.setdefault(derived.line, []).append(f"{derived.why} ({directory})" if several else derived.why)
    if not found:
        config.stash[_WHY] = [
            "targets: the defaults (the audited directory has no deny rule, sensitive file or script to aim at; "
            "name yours with --target)"
        ]
        return list(DEFAULT_TARGETS), "the defaults"
    config.stash[_WHY] = ["targets, from what the audited directory has (name others with --target):"] + [
        f"  {line:<24}  {'; '.join(whys)}" for line, whys in found.items()
    ]
    return list(found), "the audited directory"


def _modes(config: pytest.Config) -> tuple[list[str], str]:
    """--agent-audit-mode > --agent-audit-quick's `-` (as configured) > the conftest hook > the ini > every mode."""
    from ..audit.plan import AS_CONFIGURED

    given = [m.strip() for value in config.getoption("agent_audit_mode") or [] for m in value.split(",") if m.strip()]
    if given:
        return given, "--agent-audit-mode"
    if config.getoption("agent_audit_quick"):
        return [AS_CONFIGURED], "--agent-audit-quick"
    return _configured_modes(config)


def _configured_modes(config: pytest.Config) -> tuple[list[str], str]:
    from ..audit.plan import DEFAULT_MODES

    hooked = config.hook.pytest_agent_audit_modes(config=config)
    if hooked:
        return list(hooked), "pytest_agent_audit_modes"
    ini = config.getini("agent_audit_modes")
    return (list(ini), "agent_audit_modes") if ini else (list(DEFAULT_MODES), "the defaults")


def _axes(config: pytest.Config) -> tuple[list[str], list[str]]:
    """The sandbox axis and the drift axis."""
    return _sandboxes(config), list(clis(config))


def _faults(config: pytest.Config) -> list[tuple[str, str]]:
    """The faults axis (--agent-audit-faults, or the ini option): each fault of each command hook of the audited
    directories' settings, with the matcher of the hook it fails; [] without it."""
    if not (config.getoption("agent_audit_faults") or config.getini("agent_audit_faults")):
        return []
    from ..agents.hook_faults import faults_of, guards

    found = []
    for directory in map(Path, directories(config)):
        hooks = guards(directory) if directory.is_dir() else []
        found += [(f.id, hooks[f.hook - 1].matcher) for f in faults_of(directory)]
    return list(dict.fromkeys(found))


def _sandboxes(config: pytest.Config) -> list[str]:
    """The sandbox axis: --agent-audit-sandbox > the ini option > none ([""]: the agent as it is)."""
    from ..audit.plan import parse_sandboxes

    given = [v.strip() for value in config.getoption("agent_audit_sandbox") or [] for v in value.split(",")]
    if any(given):
        return parse_sandboxes(given, "--agent-audit-sandbox")
    return parse_sandboxes(config.getini("agent_audit_sandboxes") or [])


def clis(config: pytest.Config) -> dict[str, Any]:
    """The drift axis (--agent-audit-cli), resolved once, oldest release first: each case's `cli` (the choice that
    plays it again: a release's version, bundled, system or a path) and the CLI it is; {"": None} without one."""
    if _CLIS not in config.stash:
        from ..cli_facts import version_key
        from ..clis.choice import choose

        values = [v.strip() for value in config.getoption("agent_audit_cli") or [] for v in value.split(",")]
        found: dict[str, Any] = {}
        try:
            for value in filter(None, values):
                cli = choose(value, "--agent-audit-cli")
                same = next((other for other in found.values() if other.version == cli.version), None)
                if same is not None:
                    raise ConfigError(
                        f"{same.choice} and {value} are the same release ({cli.version}): a drift axis compares "
                        "releases, each once."
                    )
                found[cli.choice] = cli
        except ConfigError as error:
            raise pytest.UsageError(f"--agent-audit-cli: {error}") from None
        ordered = sorted(found.items(), key=lambda item: version_key(item[1].version))
        config.stash[_CLIS] = dict(ordered) or {"": None}
    return config.stash[_CLIS]


def what_ifs(config: pytest.Config) -> set[str]:
    """The audit's what-if columns: beside the audited directories' configuration as it is (audit/configured.py)."""
    from ..audit.configured import configured_modes, what_ifs

    if _WHAT_IFS not in config.stash:
        modes = configured_modes(Path(d) for d in directories(config) if Path(d).is_dir())
        config.stash[_WHAT_IFS] = what_ifs((c.column for c in audit_cases(config)), modes)
    return config.stash[_WHAT_IFS]


def cli_about(config: pytest.Config) -> dict[str, Any]:
    """What a run's files say of its CLI: the drift axis's releases (`clis`: version -> the choice that plays it), or
    the run's one CLI (options.cli_meta)."""
    from .options import cli_meta

    axis = {cli.version: choice for choice, cli in clis(config).items() if cli is not None}
    if axis:
        return {"cli": f"Claude Code {', '.join(axis)} (drift)", "clis": axis}
    return cli_meta(config)


def out_dir(config: pytest.Config) -> Path:
    """Where the audit's files go: --agent-audit-out, else controlplane-report/<name of the audited directory>/ in
    the directory pytest was started in (never the rootdir: the audit of another directory keeps this one's)."""
    from ..audit.command import default_out

    start = config.invocation_params.dir
    chosen = config.getoption("agent_audit_out")
    return (start / chosen).resolve() if chosen else default_out(directories(config), start)
