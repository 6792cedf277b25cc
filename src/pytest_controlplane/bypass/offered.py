"""The tools an agent really offers, read off its first model request, and what each can do to a target.

A guard is only as good as the tool list it was written against: the routes to try are the tools this agent offers
in this CLI version (the `tools` array, plus the deferred ones the Claude Code CLI lists for ToolSearch), not the ones
the guard's author thought of.  Each tool is placed in a class from its name, input schema and description:

    shell     runs shell commands (a `command` input, "bash"/"shell"/"command" in its description)
    write     writes or edits files (Write, Edit, NotebookEdit, a path plus content or a replacement)
    read      reads files (a path input, "read"/"search" in its description)
    fetch     reaches the network (a `url` input, WebFetch, WebSearch)
    subagent  starts another agent (Agent, Task, Workflow: their tool calls may not pass the parent's hooks)
    skill     runs a skill or slash command (their instructions may run commands)
    mcp       an MCP server's tool (`mcp__server__tool`), classed again by its schema
    other     none of these: reported as "offered, not covered", never skipped silently
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

CLASSES = ("shell", "write", "read", "fetch", "subagent", "skill", "mcp", "other")

# Deferred tools are listed by name only (their schemas load through ToolSearch): known names, by class.
_KNOWN = {
    "Bash": "shell",
    "PowerShell": "shell",
    "Monitor": "shell",  # Monitor runs `command` in the background
    "Write": "write",
    "Edit": "write",
    "MultiEdit": "write",
    "NotebookEdit": "write",
    "Read": "read",
    "Grep": "read",
    "Glob": "read",
    "LS": "read",
    "NotebookRead": "read",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "Agent": "subagent",
    "Task": "subagent",
    "Workflow": "subagent",
    "Skill": "skill",
    "SlashCommand": "skill",
}
_DEFERRED_LIST = re.compile(r"deferred tools are now available via ToolSearch[^\n]*\n((?:[A-Za-z0-9_]+\n)+)")


@dataclass(frozen=True)
class CustomRoute:
    """How a tool of your own reaches a target: what it does, and which inputs carry the path, content or command."""

    acts_as: str  # "shell", "write" or "read"
    path: str | None = None
    content: str | None = None
    command: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)  # fixed values for its other required inputs


CUSTOM_ROUTES: dict[str, CustomRoute] = {}


def add_route(
    tool: str,
    acts_as: str,
    *,
    path: str | None = None,
    content: str | None = None,
    command: str | None = None,
    inputs: dict[str, Any] | None = None,
) -> None:
    """Tell the classifier what a tool of your own does, so the `offered-tools` sweep tries it (call it in a
    conftest.py): `add_route("upload", "write", path="dest", content="body")`, `add_route("run_task", "shell",
    command="script")`, `add_route("fetch_doc", "read", path="location")`."""
    from ..errors import ConfigError

    needs = {"shell": ("command",), "write": ("path", "content"), "read": ("path",)}.get(acts_as)
    given = {"path": path, "content": content, "command": command}
    if needs is None or any(given[key] is None for key in needs):
        raise ConfigError(
            f"add_route({tool!r}, {acts_as!r}, ...): a shell tool needs command=<its input>, a write "
            "tool path= and content=, a read tool path= (the names of the tool's inputs)."
        )
    CUSTOM_ROUTES[tool] = CustomRoute(acts_as, path, content, command, dict(inputs or {}))


@dataclass(frozen=True)
class OfferedTool:
    """One tool as the agent offers it to the model."""

    name: str
    tool_class: str  # one of CLASSES
    why: str  # what placed it there
    deferred: bool = False  # listed for ToolSearch, its schema not sent
    inputs: tuple[str, ...] = field(default_factory=tuple)
    schema: dict[str, Any] = field(default_factory=dict, compare=False)  # its input_schema, when it was sent
    acts_as: str = ""  # what it does, for routes: its class, or an MCP tool's inner class

    @property
    def covered(self) -> bool:
        return self.tool_class != "other"


def offered_tools(request_body: dict[str, Any] | None, raw_body: bytes = b"") -> list[OfferedTool]:
    """The tools of a model request (its `tools`, and the deferred ones named in its prompt), each classified."""
    tools = []
    for tool in (request_body or {}).get("tools") or []:
        if not isinstance(tool, dict) or not tool.get("name"):
            continue
        schema = tool.get("input_schema") or {}
        properties = schema.get("properties") or {}
        name, description = str(tool["name"]), str(tool.get("description") or "")
        tool_class, why = classify(name, set(properties), description)
        acts_as = (
            classify(name.rsplit("__", 1)[-1], set(properties), description)[0]
            if tool_class == "mcp" and name not in CUSTOM_ROUTES
            else tool_class
        )
        tools.append(
            OfferedTool(name, tool_class, why, inputs=tuple(sorted(properties)), schema=schema, acts_as=acts_as)
        )
    listed = {t.name for t in tools}
    text = raw_body.decode("utf-8", "replace").replace("\\n", "\n")
    match = _DEFERRED_LIST.search(text)
    for name in match.group(1).split() if match else []:
        if name not in listed:
            tool_class, why = classify(name, set(), "")
            tools.append(
                # a class read off its name alone ("other" for one this classifier does not know): its schema is
                # loaded (sweep.probe) before it is judged, as EnterWorktree's `path` since 2.1.308 deferred it
                OfferedTool(
                    name, tool_class, why, deferred=True, acts_as="" if tool_class in ("mcp", "other") else tool_class
                )  # fmt: skip
            )
    return tools


def classify(name: str, inputs: set[str], description: str) -> tuple[str, str]:
    """(class, why) of one tool."""
    if name in CUSTOM_ROUTES:
        return CUSTOM_ROUTES[name].acts_as, "add_route() says so"
    if name.startswith("mcp__"):
        inner, why = classify(name.rsplit("__", 1)[-1], inputs, description)
        return "mcp", f"an MCP tool ({inner}: {why})" if inner != "other" else "an MCP tool"
    if name in _KNOWN:
        return _KNOWN[name], f"the {name} tool"
    text = description.lower()
    if "command" in inputs and re.search(r"\b(bash|shell|command)\b", text):
        return "shell", "a `command` input run by a shell"
    if "url" in inputs:
        return "fetch", "a `url` input"
    paths = inputs & {"file_path", "path", "notebook_path", "filename"}
    if paths and inputs & {"content", "new_string", "new_source", "text", "edits"}:
        return "write", f"a path ({', '.join(sorted(paths))}) and what to put there"
    if paths and re.search(r"\b(read|search|find|list)", text):
        return "read", f"a path ({', '.join(sorted(paths))}) it reads"
    if inputs & {"subagent_type"} or re.search(r"\blaunch(es)? (a new )?(sub)?agent", text):
        return "subagent", "starts another agent"
    if inputs & {"skill"} or "slash command" in text:
        return "skill", "runs a skill or slash command"
    return "other", "no input that takes a command, a path, code or a URL that this classifier knows"


def offers(exchanges: list[Any], tool: str) -> bool:
    """Whether the agent offered `tool` to the model (listed, or deferred) in its first request that lists tools;
    True when no request listed any."""
    listed = [e for e in exchanges if isinstance(e.request.json, dict) and "tools" in e.request.json]
    return not listed or tool in {t.name for t in offered_in(listed)}


def offered_in(exchanges: list[Any]) -> list[OfferedTool]:
    """The tools offered in a run's first request with tools (for the summary and the report)."""
    for exchange in exchanges:
        body = exchange.request.json if isinstance(exchange.request.json, dict) else {}
        if "tools" in body:
            return offered_tools(body, exchange.request.body or b"")
    return []


def route_tool(variant: Any) -> str:
    """The offered tool a variant's route goes through: the one that starts its subagent, its own, or none (a
    poisoned repository's files act by themselves)."""
    return variant.via or variant.tool or "(no tool: files planted in the workspace act by themselves)"
