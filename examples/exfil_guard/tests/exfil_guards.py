"""The two control planes of this example: the repository's own settings (its allow rules and its exfiltration hook),
and a default-deny guard that loads none of them (a module of its own name: `conftest` is a name every example's
folder has)."""

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

# The tools a default-deny guard lets through: they read the workspace, and reach nothing.
READ_ONLY = {"Read", "Glob", "Grep", "LS", "TodoWrite"}


def as_published(workspace):
    """The repository as it is, in the default permission mode: its allow rules (curl, wget, dig, WebFetch on
    docs.python.org) let those through without asking, and its hook is the guard in front of them."""
    return ClaudeAgentOptions(permission_mode="default", setting_sources=["project"])


async def default_deny(input, tool_use_id, context):
    """Everything but reading the workspace is refused: no shell, no web tool, no subagent, no MCP tool."""
    if input.get("tool_name") in READ_ONLY:
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": f"{input.get('tool_name')} is not on the allow list"}}


def default_deny_options(workspace):
    """The fixed guard: a default-deny PreToolUse callback on every tool, and the repository's settings not loaded."""
    return ClaudeAgentOptions(permission_mode="default", setting_sources=[],
                              hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[default_deny])]})
