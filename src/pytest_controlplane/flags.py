"""Every `--agent-*` flag and its ini twin, in one table: the plugin registers them, the docs' reference lists them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .config import MODE_ENV, MODES, UPSTREAM_ENV, WORKSPACE_TRUST


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
        "agent_audit_faults",
        "play the attacks again with each command hook of the audited settings made to fail one way at a time (its "
        "timeout, its interpreter missing, its script not executable or gone, exit 1, invalid JSON, a huge stdout): "
        "a call that then runs is fail-open; wins over the ini option.",
        ini_help="play the faults axis (see --agent-audit-faults; default false)",
        flag={"action": "store_true", "default": False},
        ini_type="bool",
        ini_default=False,
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
