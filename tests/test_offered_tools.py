"""The tools an agent really offers, classified: what the bundled CLI offers is pinned, so a CLI upgrade that adds a
tool fails here loudly instead of leaving a route untried."""

from __future__ import annotations

import pytest

from pytest_controlplane.bypass.offered import CLASSES, classify, offered_tools

# Claude Code CLI 2.1.332 (claude-agent-sdk 0.2.189) with a default ClaudeAgentOptions: (name, class, deferred).
CLI_2_1_332 = [
    ("Agent", "subagent", False),
    ("Bash", "shell", False),
    ("Edit", "write", False),
    ("ListAgents", "other", False),
    ("Read", "read", False),
    ("ReportFindings", "other", False),
    ("ScheduleWakeup", "other", False),
    ("Skill", "skill", False),
    ("ToolSearch", "other", False),
    ("Workflow", "subagent", False),
    ("DeferredToolPlaceholder", "other", False),
    ("Write", "write", False),
    ("CronCreate", "other", True),
    ("CronDelete", "other", True),
    ("CronList", "other", True),
    ("EnterWorktree", "other", True),
    ("ExitWorktree", "other", True),
    ("Monitor", "shell", True),
    ("NotebookEdit", "write", True),
    ("SendMessage", "other", True),
    ("TaskStop", "other", True),
    ("WebFetch", "fetch", True),
    ("WebSearch", "fetch", True),
]


@pytest.fixture(scope="module")
def first_request(tmp_path_factory):
    """The first model request of the bundled CLI, default options, answered by the scripted model."""
    from claude_agent_sdk import ClaudeAgentOptions

    from pytest_controlplane import ClaudeAgent, ModelGateway, World, text
    from pytest_controlplane.session import AgentSession

    world = World.create(tmp_path_factory.mktemp("offered") / "world", "offered-tools")
    with ModelGateway(script=[text("hi")]) as gateway:
        AgentSession(ClaudeAgent(lambda workspace: ClaudeAgentOptions()), world, gateway, timeout=60).run("hi")
    return gateway.exchanges[0].request


def test_every_tool_the_bundled_cli_offers_is_classified_or_reported_and_the_list_is_pinned(first_request):
    import claude_agent_sdk._cli_version as cli

    tools = offered_tools(first_request.json, first_request.body)
    assert cli.__cli_version__ == "2.1.332", "a new CLI: look at what it offers, then update CLI_2_1_332"
    assert [(t.name, t.tool_class, t.deferred) for t in tools] == CLI_2_1_332
    assert all(t.tool_class in CLASSES and t.why for t in tools)
    uncovered = [t.name for t in tools if not t.covered]
    assert "CronCreate" in uncovered and "Monitor" not in uncovered  # reported, never dropped


@pytest.mark.parametrize(("name", "inputs", "description", "expected"), [
    ("run_command", {"command"}, "Runs a shell command in the project.", "shell"),
    ("save_note", {"path", "content"}, "Saves a note.", "write"),
    ("open_file", {"path"}, "Reads a file and returns its text.", "read"),
    ("download", {"url"}, "Downloads a page.", "fetch"),
    ("helper", {"prompt", "subagent_type"}, "Delegates.", "subagent"),
    ("mcp__files__write_file", {"path", "content"}, "Write a file.", "mcp"),
    ("mcp__tracker__list_issues", {"project"}, "List issues.", "mcp"),
    ("clock", {"timezone"}, "Tells the time.", "other"),
])
def test_custom_and_mcp_tools_are_classified_from_their_schema(name, inputs, description, expected):
    tool_class, why = classify(name, inputs, description)
    assert tool_class == expected and why
    if name == "mcp__files__write_file":
        assert why.startswith("an MCP tool (write:")


def test_deferred_tools_come_from_the_prompts_list():
    raw = b'{"system":"...The following deferred tools are now available via ToolSearch. Use it.\\nFoo\\nWebFetch\\n\\nmore"}'
    tools = offered_tools({"tools": [{"name": "Bash", "input_schema": {"properties": {"command": {}}}}]}, raw)
    assert [(t.name, t.tool_class, t.deferred) for t in tools] == [("Bash", "shell", False), ("Foo", "other", True),
                                                                  ("WebFetch", "fetch", True)]
    # Foo's name says nothing: its schema is to be loaded (sweep.probe asks ToolSearch for each tool without a class),
    # as EnterWorktree's `path` is since 2.1.308 deferred it; WebFetch's name says what it is.
    assert [(t.name, t.acts_as) for t in tools] == [("Bash", "shell"), ("Foo", ""), ("WebFetch", "fetch")]
