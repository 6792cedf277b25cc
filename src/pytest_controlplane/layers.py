"""Who decided a tool call: every call is credited to one layer of the control plane, from what really happened.

LAYERS, in the order a call meets them:

- cli      the CLI refused the input: before any control-plane decision (a tool it does not know, a NotebookEdit of
           a file that is no notebook), or in its own checks after it (a write through a symlink, a file not read first)
- guard    your guard: a PreToolUse hook (an SDK callback, or a command hook of a settings file) or your can_use_tool
           callback; `decided_by` names it
- rule     a settings permission rule (`permissions.deny`, `disallowed_tools`); `decided_by` quotes it with its file
- mode     the permission mode itself: `dontAsk` refusing what nothing pre-approved, the safety check `plan` and `auto`
           need
- prompt   the CLI's approval prompt: it asked a person ("… needs approval", "can't be checked before it runs").  With
           nobody to answer the call is `asked`, not denied: in an interactive session a person may say yes, and
           `--agent-approval=allow` plays that person; the sandbox's proxy asking whether a domain its allowlist does
           not name may be reached is one too (`deny network-outbound HOST (user denied)`)
- sandbox  the OS sandbox the CLI runs commands in: a call that ran sandboxed (agents/sandbox.py) and that the OS
           refused in its own words ("Read-only file system", "Permission denied"), whatever its exit code, or that
           found no network in it (no name resolves but through the sandbox's proxy)
- none     nothing decided against it: the call ran, or its command ran and failed (what it did is the effects
           oracle's to judge)
- unknown  cannot tell: the agent is seen from outside and nothing it logged says who refused

The CLI's own words are the evidence for the layers it does not report otherwise: they are kept, with the releases they
were measured on, in cli_facts.py.
"""

from __future__ import annotations

import re
from typing import Any

from .cli_facts import ASKED_WORDS, MODE_WORDS, RULE_WORDS

LAYERS = {
    "cli": "the CLI's own refusal of the input",
    "guard": "your guard",
    "rule": "a settings permission rule",
    "mode": "the permission mode",
    "prompt": "the CLI's approval prompt",
    "sandbox": "the OS sandbox",
    "none": "nothing (it ran)",
    "unknown": "cannot tell (seen from outside)",
}

# The OS refusing a sandboxed call (bubblewrap: read-only binds outside the workspace, protected paths inside; a
# protected path that does not exist yet, such as `.claude/hooks`, is masked by /dev/null, measured on CLI 2.1.332:
# "Not a directory" below it, "File exists" to mkdir).
OS_REFUSAL = re.compile(r"Read-only file system|Operation not permitted|Permission denied|Not a directory|File exists")
# The path the refusal names: before it as the shell and coreutils write it (`bash: ../x: Read-only file system`,
# `mkdir: cannot create directory '.git/hooks': ...`), or after it as Python does (`Permission denied: '.env'`).
_REFUSED_PATH = re.compile(
    rf"'?(?P<before>[^\s:'\"]*[./][^\s:'\"]*)'?: (?P<a>{OS_REFUSAL.pattern})"
    rf"|(?P<b>{OS_REFUSAL.pattern}): '(?P<after>[^'\n]+)'"
)


def os_refusal(text: str) -> str:
    """The OS's words on a refused sandboxed call, with the path they name: "Permission denied (.env)"."""
    named = _REFUSED_PATH.search(text)
    if named:
        return f"{named['a'] or named['b']} ({named['before'] or named['after']})"
    found = OS_REFUSAL.search(text)
    return found.group(0) if found else ""


def refusal(text: str) -> str | None:
    """The layer whose words `text` (a refused call's tool_result) are: "prompt", "mode", "rule", or None."""
    if MODE_WORDS.search(text):
        return "mode"
    if ASKED_WORDS.search(text):
        return "prompt"
    if RULE_WORDS.search(text):
        return "rule"
    return None


def assign(call: Any) -> None:
    """Set `call.layer` from its verdict, unless the run's signals already did (a question on the permission protocol,
    a hook's record, a matching rule, the sandbox); a permission refusal no signal explains is read off the CLI's words,
    and says so (`call.inferred`)."""
    if call.layer or call.verdict == "not_run":
        return
    if call.verdict in ("denied_by_hook", "allowed_by_hook"):
        call.layer = "guard"
    elif call.verdict == "asked":
        call.layer = "prompt"
    elif call.verdict in ("errored", "allowed") and call.sandboxed and OS_REFUSAL.search(call.result):
        call.layer = "sandbox"
    elif call.verdict == "denied_by_permission":
        words = refusal(call.result) or ""
        call.layer = words if words in ("rule", "mode") else "guard" if call.permissions_consulted else "rule"
        call.inferred = not call.permissions_consulted
    elif call.verdict == "errored":
        if not call.observed:
            call.layer = "cli" if call.reached_decision is False else "unknown"
        else:  # a command's failure is the command's; a file tool's error is the CLI refusing it
            call.layer = "none" if call.reached_decision and "command" in call.input else "cli"
    else:
        call.layer = "none"


def words(layer: str) -> str:
    """What a layer is, in a report's words."""
    return LAYERS.get(layer, layer)


NOBODY = ("none", "unknown", "")  # layers whose words add nothing to a step's verdict


def held_by_words(attempt: Any, workspace: str = "") -> str:
    """What stopped the attempt, in words (paths in the workspace relative to it)."""
    if attempt is None:
        return "no effect: what was planted did not act (the agent did not load it, or it was stopped)"
    if attempt.layer == "sandbox":  # the OS refused, or the command found no network in the sandbox
        found = os_refusal(attempt.result.replace(workspace + "/", "") if workspace else attempt.result)
        return f"the OS sandbox (bubblewrap): {found or attempt.sandbox_note.split(': ', 1)[-1]}"
    if attempt.verdict == "denied_by_hook":
        return attempt.decided_by or "a PreToolUse hook"
    if attempt.verdict in ("denied_by_permission", "asked"):
        if attempt.decided_by:
            asked = " (it asked for approval; nobody answered)" if attempt.verdict == "asked" else ""
            return attempt.decided_by + asked
        if attempt.layer == "guard":
            return "the permission callback"
        reason = attempt.reason.replace(workspace + "/", "") if workspace else attempt.reason
        return {"rule": "a permission rule", "mode": "the permission mode", "prompt": "the CLI's approval prompt"}.get(
            attempt.layer, "a permission rule"
        ) + (f" ({clip(reason, 100)})" if reason else "")
    if attempt.verdict == "errored":
        reason = attempt.reason.replace(workspace + "/", "") if workspace else attempt.reason
        what = {"cli": "the CLI's own refusal", "none": "no effect: the command failed"}.get(
            attempt.layer, "a refusal (cannot tell by what: the agent is seen from outside)"
        )
        return what + (f" ({clip(reason, 100)})" if reason else "")
    if attempt.ran_input is not None:
        return "a hook rewrote the call (updatedInput), and what ran did not reach the target"
    return "no effect: the call ran and did not reach the target"


def clip(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters ending in "…" (a cut that shows it is one)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
