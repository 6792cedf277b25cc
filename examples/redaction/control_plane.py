"""The control plane under test: a Claude agent that may look at the deployment, never at its secrets.

Two layers: a PostToolUse hook that redacts `NAME=value` lines for secret-looking names from what
Read and Bash return (through `updatedToolOutput`, before the model sees it), and a PreToolUse
hook that keeps the shell away from secret files — because a redaction by pattern cannot see a
secret once a command has encoded it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, PermissionResultAllow

SECRET_LINE = re.compile(r"^(\s*(?:export\s+)?\w*(?:KEY|TOKEN|SECRET|PASSWORD)\w*\s*=).*$", re.IGNORECASE | re.MULTILINE)
SECRET_FILES = re.compile(r"\.env\b|\bsecrets/")
SHELL_GUARDED = "Bash"


def redact(text: str) -> str:
    return SECRET_LINE.sub(r"\1[REDACTED]", text)


async def redact_secrets(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
    output = data.get("tool_response")
    if data["tool_name"] == "Bash" and isinstance(output, dict):
        updated = {**output, "stdout": redact(output.get("stdout", "")), "stderr": redact(output.get("stderr", ""))}
    elif data["tool_name"] == "Read" and isinstance(output, dict) and isinstance(output.get("file"), dict):
        updated = {**output, "file": {**output["file"], "content": redact(output["file"].get("content", ""))}}
    else:
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": updated}}


async def keep_shell_off_secret_files(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
    if SECRET_FILES.search(data["tool_input"].get("command", "")):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "guard: the shell may not touch secret files"}}
    return {}


async def allow(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
    return PermissionResultAllow()


def make_options(workspace: Path) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(
        can_use_tool=allow,
        hooks={"PreToolUse": [HookMatcher(matcher=SHELL_GUARDED, hooks=[keep_shell_off_secret_files])],
               "PostToolUse": [HookMatcher(matcher="Read|Bash", hooks=[redact_secrets])]},
    )
