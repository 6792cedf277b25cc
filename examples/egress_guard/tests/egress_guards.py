"""The two control planes of this example: the repository's own settings, and a default-deny guard that loads none of
them (a module of its own name: `conftest` is a name every example's folder has)."""

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

# The tools a default-deny guard lets through: they read the workspace, and reach nothing.
READ_ONLY = {"Read", "Glob", "Grep", "LS", "TodoWrite"}


def as_published(workspace):
    """The repository as it is: its settings (the hook) are the whole control plane, under bypassPermissions."""
    return ClaudeAgentOptions(permission_mode="bypassPermissions", setting_sources=["project"])


async def default_deny(input, tool_use_id, context):
    """Everything but reading the workspace is refused: no shell, no web tool, no subagent, no MCP tool."""
    if input.get("tool_name") in READ_ONLY:
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": f"{input.get('tool_name')} is not on the allow list"}}


def default_deny_options(workspace):
    """The fixed guard: a default-deny PreToolUse callback on every tool, and the repository's settings not loaded
    (a poisoned repository's hooks and MCP servers never start)."""
    return ClaudeAgentOptions(permission_mode="bypassPermissions", setting_sources=[],
                              hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[default_deny])]})
