"""What the Claude Code CLI does, by version: the facts the plugin relies on that change from one release to another.

Every fact here was measured on the releases it names (tools/sdk_cli_table.py reads the SDK table off PyPI); a CLI
outside `MEASURED` runs with one warning that says what may be off.
"""

from __future__ import annotations

import re

MEASURED = ("2.1.332", "2.1.337")  # the releases these facts were measured on (the pinned one, the newest)

# The words the CLI refuses a call with, where no signal (a hook's record, a question on the permission protocol, a
# permissions.deny rule that matches) says who refused it: the last fallback of layers.py.  Measured on 2.1.332, with
# and without a can_use_tool callback; on 2.1.337 the quick write audit of examples/settings_hooks reads the same.
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
# mode's classifier, which plan mode asks too for Agent and Monitor: "Auto mode is unavailable: its safety check does
# not run for this session, so Monitor was not run."), measured on 2.1.332 and 2.1.337; 2.1.337 then ends the run
# with exit code 1.  No signal says it but these words.
CHECK_UNAVAILABLE = re.compile(r"Auto mode is unavailable[^\n]*")

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


def version_key(version: str) -> tuple[int, ...]:
    """`2.1.332` as (2, 1, 332), for ordering (a part that is not a number counts as 0)."""
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


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
