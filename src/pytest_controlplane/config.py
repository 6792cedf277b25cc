"""One place that resolves how an agent test runs.

Precedence, highest first: the test's ``@pytest.mark.agent(...)`` > the command line
(``--agent-mode``) > the environment (``CONTROLPLANE_MODE``) > the ini file (``agent_mode``) >
the default (``replay``).  Pytest-free: the plugin turns a `ConfigError` into its own errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

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


@dataclass(frozen=True)
class Option:
    """One `--agent-*` flag (`help`) and/or its ini twin (`ini_help`), both named after `name`."""

    name: str
    help: str = ""
    ini_help: str = ""
    flag: dict[str, Any] = field(default_factory=lambda: {"default": None})  # more argparse keywords
    ini_default: Any = ""
    ini_type: Literal["bool", "linelist", "args"] | None = None  # None: a string


OPTIONS = (
    Option(
        "agent_mode",
        "where model answers come from: replay (cassettes only, the default), record (real API, "
        "writes cassettes), auto (replay, record what is missing), live (real API, no cassettes). "
        f"Env: ${MODE_ENV}; ini: agent_mode.",
        "default agent mode (replay, record, auto, live)",
        {"default": None, "choices": MODES},
    ),
    Option(
        "agent_cassette_dir",
        "directory of cassettes (default <rootdir>/cassettes); ini: agent_cassette_dir.",
        "directory of cassettes, relative to rootdir",
        ini_default="cassettes",
    ),
    Option(
        "agent_upstream",
        "the API that record/live/auto modes forward to (default https://api.anthropic.com; a "
        f"local stand-in for recording without Claude). Env: ${UPSTREAM_ENV}; ini: agent_upstream.",
        "the API that record/live/auto modes forward to",
    ),
    Option(
        "agent_script",
        "record/auto: record from a stand-in, not Claude: the scripted model FILE.py:NAME (a ScriptedModel, a list "
        "of turns, or a dict of them by test id) served on loopback for the run, each test's script from its start; "
        "no API key needed, and the cassettes name it. Ini: agent_script (FILE relative to the ini file).",
        "FILE.py:NAME of a scripted model that record/auto modes record from (a stand-in, not Claude)",
        {"default": None, "metavar": "FILE.py:NAME"},
    ),
    Option(
        "agent_report",
        "write an HTML report of every agent test into DIR (failing ones always get one, in "
        "<rootdir>/controlplane-report by default); ini: agent_report.",
        "directory for HTML reports of agent tests",
        {"default": None, "metavar": "DIR"},
    ),
    Option(
        "agent_max_tokens",
        "record/auto/live: stop calling the real API once the run has used N tokens; ini: agent_max_tokens.",
        "token budget of a record/live run against the real API",
        {"default": None, "type": int, "metavar": "N"},
    ),
    Option(
        "agent_budget_usd",
        "record/auto/live: stop calling the real API once the run has spent about USD (list "
        "prices); ini: agent_budget_usd.",
        "dollar budget (list prices) of a record/live run",
        {"default": None, "type": float, "metavar": "USD"},
    ),
    Option(
        "agent_inconclusive",
        "what a bypass variant whose attempt never ran (not the control plane's doing) "
        "does: fail (default) or warn; ini: agent_inconclusive.",
        "fail (default) or warn: an inconclusive bypass variant",
        {"default": None, "choices": ("fail", "warn")},
    ),
    Option(
        "agent_approval",
        'the answer at the Claude Code CLI\'s approval prompt ("… needs approval"), where the agent has no '
        "can_use_tool of its own: deny (default: nobody answers, the call is `asked`, and a variant held only so is "
        "not held) or allow (a person says yes: what your guard alone does); ini: agent_approval.",
        "deny (default) or allow: the answer at the CLI's approval prompt",
        {"default": None, "choices": ("deny", "allow")},
    ),
    Option(
        "workspace_trust",
        "how the Claude Code CLI sees the workspace: owner (default: trusted, as in the repository's own checkout; "
        "permissions.allow of its .claude/settings.json in force) or clone (a fresh clone nobody trusted: the CLI "
        "ignores those allow entries and asks instead; the view a poisoned repository meets); ini: workspace_trust.",
        "owner (default) or clone: how the Claude Code CLI sees the workspace (see --workspace-trust)",
        {"default": None, "choices": WORKSPACE_TRUST},
    ),
    Option(
        "agent_cli",
        "the Claude Code CLI a ClaudeAgent runs: a VERSION (2.1.300, or latest: from the npm registry, installed into "
        "the user cache on first use), bundled (the default), system (`claude` on PATH) or a PATH (with a / in it); "
        "wins over ClaudeAgent(cli=...) and ClaudeAgentOptions(cli_path=...), not over @pytest.mark.agent(cli=...).",
        "the Claude Code CLI a ClaudeAgent runs: VERSION, latest, bundled, system or a PATH (relative to the ini file)",
        {"default": None, "metavar": "VERSION|PATH|bundled|system"},
    ),
    Option(
        "agent_routes",
        "after the bypass tests, list the tools the agent under test offers, each with its class "
        "and how many variants of each family went through it.",
        flag={"action": "store_true", "default": False},
    ),
    Option(
        "agent_audit",
        "collect the audit instead of the tests: every curated bypass variant of the audit's targets, under every "
        "permission mode, played through each given directory's `agent`; prints the route x mode matrix and writes "
        "it as HTML beside the reports; ini: agent_audit.",
        "collect the audit instead of the tests (see --agent-audit)",
        {"action": "store_true", "default": False},
        ini_default=False,
        ini_type="bool",
    ),
    Option(
        "agent_audit_json",
        "write the audit's records to PATH as JSON (one per shard; join them with `controlplane audit merge`).",
        flag={"default": None, "metavar": "PATH"},
    ),
    Option(
        "agent_audit_write",
        "write a pytest module to PATH that pins every audit verdict: holes fail until fixed, held must stay held.",
        flag={"default": None, "metavar": "PATH"},
    ),
    Option(
        "agent_sarif",
        "write the run's holes (audit items and bypass_variants tests that got through) to PATH as SARIF 2.1.0, "
        "for code scanning; ini: agent_sarif.",
        "where --agent-sarif writes (SARIF 2.1.0 of the run's holes)",
        {"default": None, "metavar": "PATH"},
    ),
    Option(
        "agent_summary_md",
        "write the run's holes as a Markdown summary (the matrix, totals, reproductions) to PATH; it is appended to "
        "$GITHUB_STEP_SUMMARY when that is set; ini: agent_summary_md.",
        "where --agent-summary-md writes",
        {"default": None, "metavar": "PATH"},
    ),
    Option(
        "agent_audit_shard",
        "run only shard K of N (1-based, `--agent-audit-shard 2/4`): each item in exactly one shard, by a hash of "
        "its node id, the same in every run; for the audit, its written module or any suite split across CI jobs "
        "(join the audit's shards with `controlplane audit merge`).",
        flag={"default": None, "metavar": "K/N"},
    ),
    Option(
        "agent_audit_target",
        "audit this 'family target' (repeatable: --agent-audit-target 'read .env' --agent-audit-target 'exec curl'); "
        "wins over the conftest hook and the ini option; default: the targets the audited repository has.",
        flag={"action": "append", "default": None, "metavar": "'FAMILY TARGET'"},
    ),
    Option(
        "agent_audit_mode",
        "audit under this permission mode (repeatable, or a,b; '-': as configured); wins over the hook and the ini.",
        flag={"action": "append", "default": None, "metavar": "MODE"},
    ),
    Option(
        "agent_audit_sandbox",
        "audit under these OS sandbox levels (repeatable, or a,b): off, configured (as the agent is), strict (that, "
        "hardened: no dangerouslyDisableSandbox, excludedCommands or silent fallback); wins over the ini option.",
        flag={"action": "append", "default": None, "metavar": "LEVEL"},
    ),
    Option(
        "agent_audit_cli",
        "play every item on each of these Claude Code CLIs (repeatable, or a,b: 2.1.300, latest, bundled, a PATH) "
        "and report the drift between them; wins over --agent-cli for the audit's items.",
        flag={"action": "append", "default": None, "metavar": "CLI"},
    ),
    Option(
        "agent_audit_family",
        "audit only the targets of this family (repeatable): write, read, exec, escape.",
        flag={"action": "append", "default": None, "metavar": "FAMILY"},
    ),
    Option(
        "agent_audit_route",
        "audit only this route class (repeatable): file, shell, command, subagent, poisoned, sandbox, offered.",
        flag={"action": "append", "default": None, "metavar": "CLASS"},
    ),
    Option(
        "agent_audit_quick",
        "a first answer in a minute: one plain spelling per route class of each target, as configured ('-').",
        flag={"action": "store_true", "default": False},
    ),
    Option(
        "agent_audit_out",
        "write the audit's files into DIR (default: controlplane-report/<name of the audited directory>/ here): "
        "audit.html, audit.json, audit.sarif, summary.md, test_audit_regression.py and its items' reports.",
        flag={"default": None, "metavar": "DIR"},
    ),
    Option(
        "agent_audit_targets",
        ini_help="the audit's targets, one 'family target' per line (default: what the audited repository has)",
        ini_type="linelist",
        ini_default=None,
    ),
    Option(
        "agent_audit_modes",
        ini_help="the permission modes the audit tries (default: all the CLI accepts; '-': the agent as configured)",
        ini_type="args",
        ini_default=None,
    ),
    Option(
        "agent_audit_sandboxes",
        ini_help="the OS sandbox levels the audit tries: off, configured, strict (default: none, the agent as it is)",
        ini_type="args",
        ini_default=None,
    ),
    Option("agent_timeout", ini_help="seconds one agent run may take (default 120); the marker's timeout= wins"),
    Option(
        "agent_network",
        ini_help="run every agent test in a world network of its own: every name resolves, every address answers and "
        "is recorded (effects.egress), nothing leaves; the marker's network= wins (default false)",
        ini_type="bool",
        ini_default=False,
    ),
    Option(
        "agent_warm",
        ini_help="play bypass variants and audit items in a long-lived CLI per worker (default true; false: each in "
        "a process of its own, as before)",
        ini_type="bool",
        ini_default=True,
    ),
    Option(
        "agent_warm_check",
        "play every tenth warm bypass variant (or audit item) again cold, in a copy of its world, and fail it when "
        "the verdict, what held it or what happened differ; ini: agent_warm_check.",
        "check a sample of warm variants against cold plays (see --agent-warm-check)",
        flag={"action": "store_true", "default": False},
        ini_default=False,
        ini_type="bool",
    ),
)


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
