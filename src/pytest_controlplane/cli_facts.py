"""What the Claude Code CLI does, by version: the facts the plugin relies on that change from one release to another.

Every fact here was measured on the releases it names (tools/sdk_cli_table.py reads the SDK table off PyPI); a CLI
outside `MEASURED` runs with one warning that says what may be off.  A fact that changed between two measured releases
is keyed by the first measured release that has it (`*_SINCE`, read with `at_least`); the releases between the last
measured one without it and that one were not measured, and are taken to have it.  `make test-clis` plays the tests
marked `cli_dependent` on the newest release and on 2.1.300; each reads what it expects of the running CLI from here.
Only the standard library is imported: every layer of the plugin may read these facts.
"""

from __future__ import annotations

import json
import re

# The releases every fact below was measured on: the pinned one (bundled by the dev pin, claude-agent-sdk 0.2.189),
# the newest, and one two months older.  `make test-clis` plays the CLI-dependent tests on the newest and the oldest.
MEASURED = ("2.1.300", "2.1.332", "2.1.337")


def version_key(version: str) -> tuple[int, ...]:
    """`2.1.332` as (2, 1, 332), for ordering (a part that is not a number counts as 0)."""
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def at_least(version: str, first: str) -> bool:
    """Whether release `version` is `first` or newer."""
    return version_key(version) >= version_key(first)


# The permission modes the CLI accepts (`--permission-mode`), as claude-agent-sdk names them: `claude --help` lists
# acceptEdits, auto, bypassPermissions, manual, dontAsk and plan on 2.1.300, 2.1.332 and 2.1.337, and each takes
# "default", the name the SDK sends for the CLI's "manual".
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")

# The tools the CLI offers only when something can answer its permission prompt (a can_use_tool callback): measured on
# 2.1.300, 2.1.332 and 2.1.337, the request is otherwise the same (byte for byte on 2.1.332).  Where they are offered
# follows DEFERS_TOOLS_SINCE: in the `tools` array on 2.1.300, EnterPlanMode and ExitPlanMode deferred since.
PROMPT_ONLY_TOOLS = ("AskUserQuestion", "EnterPlanMode", "ExitPlanMode")

# Tools not every measured release offers, by the first measured release that offers it to a run of
# ClaudeAgentOptions() here (the first request's `tools`, and the deferred tools it lists for ToolSearch):
# - Monitor: 2.1.300 ships it behind a feature flag (`tengu_amber_sentinel`, off by default: a run here fetches no
#   flags), and neither 2.1.300 nor 2.1.308 offers it; 2.1.310, 2.1.316, 2.1.319, 2.1.325, 2.1.332 and 2.1.337 do
#   (2.1.309 not measured).  So a Monitor variant is `not_applicable` on an older release, never judged;
# - ToolSearch and DeferredToolPlaceholder: see DEFERS_TOOLS_SINCE.
# A tool not named here is offered by every measured release that has it at all: routes are always read off the
# agent's real request (bypass/offered.py), never off this table.
TOOLS_SINCE = {"Monitor": "2.1.310", "ToolSearch": "2.1.308", "DeferredToolPlaceholder": "2.1.308"}

# Since when the CLI defers most tools (CronCreate, NotebookEdit, WebFetch, Monitor, ...): listed by name in the
# prompt for ToolSearch, callable directly, their schemas left out of `tools` (~43 KB a request on 2.1.332 against
# ~61 KB on 2.1.300).  2.1.300 puts every tool in `tools`; 2.1.308 and every later measured release defer (2.1.301 to
# 2.1.307 not measured).
DEFERS_TOOLS_SINCE = "2.1.308"


def offers_tool(version: str, name: str) -> bool:
    """Whether CLI `version` offers tool `name` to a run of default options (see TOOLS_SINCE)."""
    first = TOOLS_SINCE.get(name)
    return first is None or at_least(version, first)


def defers_tools(version: str) -> bool:
    """Whether CLI `version` lists some of its tools for ToolSearch instead of in the request's `tools`."""
    return at_least(version, DEFERS_TOOLS_SINCE)


# The words the CLI refuses a call with, where no signal (a hook's record, a question on the permission protocol, a
# permissions.deny rule that matches) says who refused it: the last fallback of layers.py.  Measured on 2.1.332, with
# and without a can_use_tool callback; tests/test_layers.py reads the same on 2.1.300 and 2.1.337.
# ASKED_WORDS: the CLI asking for approval with nobody to ask (with a can_use_tool callback, each is a question to it
# instead); "Cannot write … while in plan mode" is one too: plan mode asks before an edit.
ASKED_WORDS = re.compile(
    r"needs approval|requires approval"
    r"|requested permissions to \w+ .*but you haven.t granted it"
    r"|can.t be checked before it runs"
    r"|was blocked\. For security, Claude Code may only"
    r"|Review dynamic workflow before running"
    r"|traversal after a directory segment, which may follow a symlink"
    # the shell checks that ask before a command runs (measured: a person's yes at the prompt runs each of them)
    r"|requires manual approval|evaluates arguments as shell code|^Brace expansion|changes shell option state"
    r"|executes arbitrary commands|cannot be auto-allowed|The user can add the allow rule"
    r"|while in plan mode",
    re.S | re.M,
)
MODE_WORDS = re.compile(r"running in don.t ask mode|Auto mode is unavailable")  # the mode refused it
RULE_WORDS = re.compile(r"Permission to use \S+ .*has been denied|denied by your permission settings", re.S)

# The words a CLI refuses a call with when a permission mode's safety check cannot run in this session (the auto
# mode's classifier, which plan mode asks too for Agent, Monitor and Bash).  No signal says it but these words.
# - since CLASSIFIER_SKIPPED_SINCE the CLI knows the check does not run here and refuses at once: "Auto mode is
#   unavailable: its safety check does not run for this session, so Monitor was not run." (a permission denial);
#   2.1.337 then ends the run with exit code 1;
# - before, it runs the classifier: it sends the classifier's own requests ("You are a security monitor for
#   autonomous AI coding agents", 10 for one Bash call in plan mode on 2.1.300) to the model, here the plugin's
#   gateway, which has no classifier's answer to give; the CLI then refuses "Auto mode could not evaluate this action
#   and is blocking it for safety — run with --debug for details", or, when it got no answer at all, "<model> is
#   temporarily unavailable, so auto mode cannot determine the safety of Bash right now." (each a tool error).
CHECK_UNAVAILABLE = re.compile(
    r"Auto mode is unavailable[^\n]*"
    r"|Auto mode could not evaluate this action[^\n]*"
    r"|\S+ is temporarily unavailable, so auto mode cannot determine the safety of[^\n]*"
)
# The classifier's own requests, as they reach the gateway (measured on 2.1.300): the transcript to judge, then
# "Respond with <severity>N</severity> ONLY", N from 0 to 100, below 50 an allow.  They are not the agent's turns: a
# scripted model answers them without using one (CLASSIFIER_ALLOW), and an attempt that met one cannot be judged here
# (its outcome is Claude's judgement, which no script stands in for).  2.1.300 asks it in default mode too, for some
# Bash commands (`env | grep DB_`).
CLASSIFIER_REQUEST = re.compile(r"Respond with <severity>N</severity>")
CLASSIFIER_ALLOW = "<severity>0</severity>"


def classifier_asks(body: object) -> bool:
    """Whether a model request's body (parsed JSON) is the CLI's safety classifier asking: its last message asks
    for a severity."""
    messages = body.get("messages") if isinstance(body, dict) else None
    last = messages[-1] if isinstance(messages, list) and messages else None
    return last is not None and CLASSIFIER_REQUEST.search(json.dumps(last)) is not None


# A warm CLI switched into one of these modes (set_permission_mode) does not always ask the auto mode's safety check
# before a subagent starts or a script runs, where a CLI started in the mode does: measured on 2.1.300, 2.1.332 and
# 2.1.337 (held or asked warm, not offered cold; which calls it hits changes from run to run).  Their runs play cold.
MODES_PLAYED_COLD = ("plan", "auto")
# Measured in plan mode: 2.1.300, 2.1.308, 2.1.310 and 2.1.316 run the classifier; 2.1.319, 2.1.325, 2.1.332 and
# 2.1.337 do not (2.1.317 and 2.1.318 not measured).
CLASSIFIER_SKIPPED_SINCE = "2.1.319"


def runs_the_classifier(version: str) -> bool:
    """Whether CLI `version`, in plan or auto mode here, asks the model for the auto mode's safety check (its requests
    reach the gateway) instead of refusing at once (see CHECK_UNAVAILABLE)."""
    return not at_least(version, CLASSIFIER_SKIPPED_SINCE)


# The sandbox as the CLI runs it (agents/sandbox.py), in its own words and semantics; measured on 2.1.332 and
# tests/test_sandbox.py and tests/test_sandbox_network.py read the same on 2.1.300 and 2.1.337.
# When the sandbox cannot start, the CLI answers one call so and runs the rest of the session unsandboxed.
SANDBOX_FAILED_TO_START = re.compile(r"Sandbox is enabled but failed to initialize[^\n]*")
# Its proxy's refusal, as the CLI appends it to the tool result ("user denied" when its prompt had nobody to answer).
SANDBOX_NETWORK_REFUSED = re.compile(r"^deny network-outbound (\S+) \(([^)\n]*)\)", re.M)
# Its proxy answering 502: it could not reach what it was asked for (measured with its mux socket removed: "502 Bad
# Gateway", "mux backend dial failed (ENOENT)"), where a world network answers every address: the plumbing broke.
SANDBOX_PROXY_FAILED = re.compile(
    r"Tunnel connection failed: 502[^\n'>]*|CONNECT tunnel failed, response 502|502 Bad Gateway|mux backend dial failed"
)
# What makes a command more than one simple command, which an `excludedCommands` entry then leaves sandboxed
# (`python3 w.py` and `touch "x"` are excluded; `python3 -c "open(...)"`, `sh -c 'echo > x'`, `true && touch x` not).
SANDBOX_NOT_EXCLUDED = re.compile(r"[;&|<>()`$\n]")

# Since when the CLI's permission check holds a Bash command that runs sandboxed to the file rules (`Read(...)`,
# `Edit(...)`) of the files it names, as it holds one that runs unsandboxed: `cat ~/.ssh/id` under `Read(~/.ssh/**)`
# is refused "Permission to use Bash with command cat ~/.ssh/id has been denied." on 2.1.325, 2.1.332 and 2.1.337.
# On 2.1.300, 2.1.308, 2.1.310, 2.1.316 and 2.1.319 only Bash rules (`Bash(curl:*)`) are checked before a sandboxed
# command: it runs, and the sandbox holds the file rules itself (2.1.321 and 2.1.323 not measured).  On every
# measured release the sandbox takes the Read deny rules as denyRead (the file reads as missing: "No such file or
# directory") and the protected paths in the workspace as read-only ("Permission denied").
FILE_RULES_HOLD_SANDBOXED_COMMANDS_SINCE = "2.1.325"


def file_rules_hold_sandboxed_commands(version: str) -> bool:
    """Whether CLI `version` refuses a sandboxed Bash command by the Read/Edit deny rule of a file it names (else the
    command runs, and the sandbox holds the rule: see FILE_RULES_HOLD_SANDBOXED_COMMANDS_SINCE)."""
    return at_least(version, FILE_RULES_HOLD_SANDBOXED_COMMANDS_SINCE)


# What the CLI (measured on 2.1.300, 2.1.332 and 2.1.337) appends to the global gitignore (core.excludesfile, else
# ~/.config/git/ignore): its staging folder for edits made through Bash, once per process in a git repository, and
# settings.local.json when it writes local settings (read from 2.1.332's code).  A new CLI that adds another line
# shows as the agent's until it is named here.
GITIGNORE_LINES = ("**/.claude/.cc-writes/", "**/.claude/settings.local.json")

# What the CLI runs for itself, seen by a PATH shim of the program (measured on 2.1.332; tests/test_true_cells.py
# reads the same on 2.1.300 and 2.1.337): `npm root -g` as it starts (npm's `#!/usr/bin/env node` finds a `node`
# shim), and git asked for its excludes file in a repository.  They run in the CLI's own process group, where an MCP
# server or hook of the repository runs too: the group alone cannot tell them.
HELPER_RUNS = {
    "node": re.compile(r"(?:^|/)npm root -g$"),
    "git": re.compile(r"\bconfig --no-includes core\.excludesfile\b"),
}

# The lines of a session transcript that carry no uuid (the CLI's bookkeeping, never a message: history/check.py
# passes over every such line, whatever its type), by the first measured release that writes each in a run of one
# tool call: 2.1.300 writes the first seven; 2.1.332 adds tools-used; 2.1.337 api-request-route, as the very first
# line of the file, before the queue-operation lines (what a run killed before it saved the prompt leaves may hold
# both: history/stored.py calls any such transcript empty, whatever its lines' types).
BOOKKEEPING_SINCE = {
    "queue-operation": "2.1.300",
    "atis-latch": "2.1.300",
    "api-request-shape": "2.1.300",
    "api-request-blob": "2.1.300",
    "api-request": "2.1.300",
    "last-prompt": "2.1.300",
    "cost-state": "2.1.300",
    "tools-used": "2.1.332",
    "api-request-route": "2.1.337",
}


def bookkeeping_lines(version: str) -> set[str]:
    """The types of the uuid-less lines CLI `version` writes in a plain run's transcript (see BOOKKEEPING_SINCE)."""
    return {kind for kind, first in BOOKKEEPING_SINCE.items() if at_least(version, first)}


# The Claude Code CLI each claude-agent-sdk release bundles (its claude_agent_sdk/_cli_version.py), as
# tools/sdk_cli_table.py reads it off PyPI; 2026-12-06.
BUNDLED_BY_SDK = {
    "0.2.100": "2.1.176",
    "0.2.101": "2.1.177",
    "0.2.102": "2.1.178",
    "0.2.103": "2.1.179",
    "0.2.104": "2.1.181",
    "0.2.105": "2.1.183",
    "0.2.106": "2.1.185",
    "0.2.107": "2.1.186",
    "0.2.108": "2.1.187",
    "0.2.109": "2.1.190",
    "0.2.110": "2.1.191",
    "0.2.111": "2.1.202",
    "0.2.112": "2.1.203",
    "0.2.113": "2.1.204",
    "0.2.114": "2.1.205",
    "0.2.115": "2.1.206",
    "0.2.116": "2.1.207",
    "0.2.117": "2.1.208",
    "0.2.118": "2.1.209",
    "0.2.119": "2.1.210",
    "0.2.120": "2.1.211",
    "0.2.121": "2.1.212",
    "0.2.122": "2.1.214",
    "0.2.123": "2.1.215",
    "0.2.124": "2.1.216",
    "0.2.125": "2.1.217",
    "0.2.126": "2.1.218",
    "0.2.127": "2.1.219",
    "0.2.128": "2.1.220",
    "0.2.129": "2.1.221",
    "0.2.130": "2.1.222",
    "0.2.131": "2.1.223",
    "0.2.132": "2.1.224",
    "0.2.133": "2.1.225",
    "0.2.134": "2.1.226",
    "0.2.135": "2.1.227",
    "0.2.136": "2.1.228",
    "0.2.137": "2.1.229",
    "0.2.138": "2.1.232",
    "0.2.139": "2.1.233",
    "0.2.140": "2.1.235",
    "0.2.141": "2.1.236",
    "0.2.142": "2.1.237",
    "0.2.143": "2.1.238",
    "0.2.144": "2.1.239",
    "0.2.145": "2.1.247",
    "0.2.146": "2.1.248",
    "0.2.147": "2.1.250",
    "0.2.148": "2.1.251",
    "0.2.149": "2.1.252",
    "0.2.150": "2.1.257",
    "0.2.151": "2.1.258",
    "0.2.152": "2.1.259",
    "0.2.153": "2.1.273",
    "0.2.154": "2.1.274",
    "0.2.155": "2.1.275",
    "0.2.156": "2.1.276",
    "0.2.157": "2.1.277",
    "0.2.158": "2.1.280",
    "0.2.159": "2.1.281",
    "0.2.160": "2.1.283",
    "0.2.161": "2.1.284",
    "0.2.162": "2.1.285",
    "0.2.163": "2.1.286",
    "0.2.164": "2.1.292",
    "0.2.165": "2.1.294",
    "0.2.166": "2.1.299",
    "0.2.167": "2.1.300",
    "0.2.168": "2.1.301",
    "0.2.169": "2.1.305",
    "0.2.170": "2.1.306",
    "0.2.171": "2.1.307",
    "0.2.172": "2.1.308",
    "0.2.173": "2.1.309",
    "0.2.174": "2.1.310",
    "0.2.175": "2.1.314",
    "0.2.176": "2.1.316",
    "0.2.177": "2.1.317",
    "0.2.178": "2.1.318",
    "0.2.179": "2.1.319",
    "0.2.180": "2.1.321",
    "0.2.181": "2.1.323",
    "0.2.182": "2.1.325",
    "0.2.183": "2.1.326",
    "0.2.184": "2.1.327",
    "0.2.185": "2.1.328",
    "0.2.186": "2.1.329",
    "0.2.187": "2.1.330",
    "0.2.188": "2.1.331",
    "0.2.189": "2.1.332",
    "0.2.190": "2.1.337",
}


class UnmeasuredCLI(UserWarning):
    """The run's Claude Code CLI is a release the plugin's facts were not measured on (said once per run)."""


def outside_measured(version: str) -> str | None:
    """What may be off with a CLI release none of these facts were measured on (None for a measured one)."""
    if version in MEASURED:
        return None
    return (
        f"Claude Code CLI {version} is not a release these facts were measured on ({', '.join(MEASURED)}): a layer "
        "credited from the CLI's words, the permission modes it offers, the files it writes of its own and its "
        "sandbox's behaviour may be off. Verdicts read from signals (hook records, the permission protocol, the "
        "effects on the files) hold on any release."
    )


def sdk_bundling(cli_version: str) -> str | None:
    """The newest claude-agent-sdk release known to bundle `cli_version` (None: none known)."""
    found = [sdk for sdk, cli in BUNDLED_BY_SDK.items() if cli == cli_version]
    return max(found, key=version_key) if found else None


def pin_advice(cli_version: str) -> str:
    """How to run exactly `cli_version`: the SDK release that bundles it, or the plugin's own install of it."""
    sdk = sdk_bundling(cli_version)
    bundled = (
        f"pin claude-agent-sdk=={sdk} (pip install 'claude-agent-sdk=={sdk}': it bundles CLI {cli_version})"
        if sdk
        else f"no claude-agent-sdk release is known to bundle CLI {cli_version}"
    )
    return f"{bundled}, or run that CLI: --agent-cli {cli_version} (controlplane cli install {cli_version})"
