"""What the plugin knows of each Claude Code CLI release (cli_facts.py): the facts of each measured release, and the
running CLI checked against them (`cli_dependent`: `make test-clis` plays those on the newest release and 2.1.300)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import claude_agent_sdk._cli_version as bundled
import pytest

from cli_release import running, running_cli
from pytest_controlplane.cli_facts import (
    BUNDLED_BY_SDK,
    CHECK_UNAVAILABLE,
    GITIGNORE_LINES,
    HELPER_RUNS,
    MEASURED,
    PERMISSION_MODES,
    PROMPT_ONLY_TOOLS,
    SANDBOX_FAILED_TO_START,
    SANDBOX_NETWORK_REFUSED,
    SANDBOX_NOT_EXCLUDED,
    at_least,
    bookkeeping_lines,
    defers_tools,
    file_rules_hold_sandboxed_commands,
    offers_tool,
    outside_measured,
    pin_advice,
    runs_the_classifier,
    sdk_bundling,
    version_key,
)
from pytest_controlplane.layers import refusal

EXAMPLES = Path(__file__).parent.parent / "examples"
CONTROLPLANE = [sys.executable, "-m", "pytest_controlplane.cli"]


def test_the_table_names_the_cli_the_installed_sdk_really_bundles():
    assert BUNDLED_BY_SDK[version("claude-agent-sdk")] == bundled.__cli_version__


def test_a_cli_release_is_pinned_by_the_newest_sdk_that_bundles_it():
    assert sdk_bundling("2.1.332") == "0.2.189"
    assert "pip install 'claude-agent-sdk==0.2.189'" in pin_advice("2.1.332")
    assert "--agent-cli 2.1.332 (controlplane cli install 2.1.332)" in pin_advice("2.1.332")


def test_a_cli_no_sdk_bundles_is_said_as_such():
    assert sdk_bundling("2.1.9999") is None
    assert pin_advice("2.1.9999").startswith("no claude-agent-sdk release is known to bundle CLI 2.1.9999, or run")
    assert version_key("2.1.99") < version_key("2.1.332") < version_key("2.2.0")


def test_a_release_the_facts_were_not_measured_on_is_said_to_be_so():
    assert outside_measured("2.1.301").startswith("Claude Code CLI 2.1.301 is not a release these facts were "
                                                  "measured on (2.1.300, 2.1.332, 2.1.337): a layer credited from")
    assert all(outside_measured(release) is None for release in MEASURED)
    assert bundled.__cli_version__ in MEASURED  # the pinned CLI is always measured


# What each measured release does, as measured (see cli_facts.py for how): Monitor offered, tools deferred for
# ToolSearch, a sandboxed command checked against the file rules, the auto mode's classifier asked of the model, the
# uuid-less lines of a transcript, and the words a mode whose check cannot run refuses with.
BOOKKEEPING = {"queue-operation", "atis-latch", "api-request-shape", "api-request-blob", "api-request", "last-prompt",
               "cost-state"}  # fmt: skip
RELEASES = {
    "2.1.300": {
        "monitor": False, "defers": False, "file rules when sandboxed": False, "classifier": True,
        "bookkeeping": BOOKKEEPING,
        "check unavailable": "Auto mode could not evaluate this action and is blocking it for safety — run with "
                             "--debug for details. This is",
    },
    "2.1.332": {
        "monitor": True, "defers": True, "file rules when sandboxed": True, "classifier": False,
        "bookkeeping": BOOKKEEPING | {"tools-used"},
        "check unavailable": "Auto mode is unavailable: its safety check does not run for this session, so Monitor "
                             "was not run. Other actions",
    },
    "2.1.337": {
        "monitor": True, "defers": True, "file rules when sandboxed": True, "classifier": False,
        "bookkeeping": BOOKKEEPING | {"tools-used", "api-request-route"},
        "check unavailable": "Auto mode is unavailable: its safety check does not run for this session, so Bash was "
                             "not run. Other actions",
    },
}  # fmt: skip


def test_every_measured_release_has_its_facts_here():
    assert set(RELEASES) == set(MEASURED)


@pytest.mark.parametrize("release", sorted(RELEASES, key=version_key))
def test_the_facts_of_each_measured_release(release):
    facts = RELEASES[release]
    assert offers_tool(release, "Monitor") is facts["monitor"]
    assert defers_tools(release) is facts["defers"]
    assert offers_tool(release, "ToolSearch") is offers_tool(release, "DeferredToolPlaceholder") is facts["defers"]
    assert offers_tool(release, "Bash") and offers_tool(release, "Write")  # every release has them
    assert file_rules_hold_sandboxed_commands(release) is facts["file rules when sandboxed"]
    assert runs_the_classifier(release) is facts["classifier"]
    assert bookkeeping_lines(release) == facts["bookkeeping"]
    said = CHECK_UNAVAILABLE.search(facts["check unavailable"])
    assert said and said.group(0) == facts["check unavailable"]  # not offered, in the CLI's whole sentence
    # the same on every measured release
    assert PERMISSION_MODES == ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")
    assert PROMPT_ONLY_TOOLS == ("AskUserQuestion", "EnterPlanMode", "ExitPlanMode")
    assert GITIGNORE_LINES == ("**/.claude/.cc-writes/", "**/.claude/settings.local.json")
    assert HELPER_RUNS["node"].search("/usr/bin/npm root -g") and HELPER_RUNS["git"].search(
        "git config --no-includes core.excludesfile")
    assert not HELPER_RUNS["node"].search("-e 1")


@pytest.mark.parametrize(("words", "layer"), [
    ("Permission to use Bash has been denied because Claude Code is running in don't ask mode", "mode"),
    ("Auto mode is unavailable: its safety check does not run for this session, so Bash was not run.", "mode"),
    ("Permission to use Bash with command cat ~/.ssh/id_x has been denied.", "rule"),
    ("This command requires approval", "prompt"),
    ("Cannot write .env while in plan mode", "prompt"),
    ("Exit code 1\ncat: .env: No such file or directory", None),
])  # fmt: skip
def test_the_refusal_words_of_the_measured_releases_name_their_layer(words, layer):
    assert refusal(words) == layer


def test_the_sandboxs_words():
    assert SANDBOX_FAILED_TO_START.search("Sandbox is enabled but failed to initialize: Failed to create bridge")
    refused = SANDBOX_NETWORK_REFUSED.search("curl: (56)\ndeny network-outbound collector.example:443 (user denied)")
    assert refused and refused.groups() == ("collector.example:443", "user denied")
    assert SANDBOX_NOT_EXCLUDED.search('python3 -c "open(1)"') and not SANDBOX_NOT_EXCLUDED.search('touch "x"')


def test_the_releases_between_two_measured_ones_are_taken_to_have_what_the_newer_one_has():
    """Each threshold sits between two measured releases (cli_facts.py says which); the ones between are assumed."""
    assert not offers_tool("2.1.308", "Monitor") and offers_tool("2.1.310", "Monitor")
    assert not defers_tools("2.1.300") and defers_tools("2.1.308")
    assert not file_rules_hold_sandboxed_commands("2.1.319") and file_rules_hold_sandboxed_commands("2.1.325")
    assert runs_the_classifier("2.1.316") and not runs_the_classifier("2.1.319")
    assert at_least("2.1.337", "2.1.332") and at_least("2.2.0", "2.1.999") and not at_least("2.1.99", "2.1.300")


@pytest.mark.slow
@pytest.mark.cli_dependent
def test_the_running_cli_offers_the_modes_and_tools_and_writes_the_lines_its_facts_say(tmp_path):
    """The running CLI against its facts: the permission modes `claude --help` lists, the tools its first request
    offers (Monitor, deferred tools for ToolSearch), and the uuid-less lines of its transcript."""
    from claude_agent_sdk import ClaudeAgentOptions

    from pytest_controlplane import ClaudeAgent, ModelGateway, World, text, tool_use
    from pytest_controlplane.bypass.offered import offered_tools
    from pytest_controlplane.session import AgentSession

    cli, release = running_cli(), running()
    help_text = subprocess.run([cli.path, "--help"], capture_output=True, text=True, timeout=60,
                               env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}).stdout  # fmt: skip
    listed = set(re.findall(r'"(\w+)"', help_text[help_text.index("--permission-mode") :].split(")", 1)[0]))
    assert listed == {*PERMISSION_MODES, "manual"} - {"default"}, help_text  # the SDK's "default" is the CLI's manual

    world = World.create(tmp_path / "world", "cli-facts")
    agent = ClaudeAgent(lambda workspace: ClaudeAgentOptions(permission_mode="bypassPermissions"), cli=cli.path)
    with ModelGateway(script=[tool_use("Bash", {"command": "echo hi"}), text("done")]) as gateway:
        session = AgentSession(agent, world, gateway, timeout=60)
        session.run("hi")
    first = gateway.exchanges[0].request
    tools = {tool.name: tool.deferred for tool in offered_tools(first.json, first.body)}
    assert ("Monitor" in tools) is offers_tool(release, "Monitor"), tools
    assert ("ToolSearch" in tools) is any(tools.values()) is defers_tools(release), tools
    assert not set(PROMPT_ONLY_TOOLS) & set(tools), tools  # nothing to answer the prompt: none offered
    lines = [json.loads(line) for line in session.transcript_path().read_text().splitlines() if line.strip()]
    assert {line["type"] for line in lines if "uuid" not in line} == bookkeeping_lines(release)
    assert {line["type"] for line in lines if "uuid" in line} == {"user", "assistant", "attachment"}


@pytest.mark.slow
@pytest.mark.cli_dependent
def test_a_mode_whose_safety_check_cannot_run_here_is_not_applicable_in_the_clis_words(tmp_path):
    """Plan mode asks the auto mode's safety check before a Monitor or Bash command; with no such check in this session
    the CLI refuses the call ("Auto mode is unavailable: ..."), and CLI 2.1.337 then exits 1; a release that asks the
    model for it (2.1.300) sends the classifier's requests to the gateway, and the attempt that met them is decided by
    Claude's judgement.  Either proves nothing about the mode: the cell is not offered (from that signal, or in the
    CLI's words), never held by the mode nor errored.  The twin: the same variant under the default mode is judged (no hook matches Monitor, so the CLI asks;
    the repository's hook lets `printf > .env` reach the prompt).  A release without Monitor (2.1.300) offers none."""
    release = running()
    shutil.copytree(EXAMPLES / "settings_hooks" / "project", tmp_path / "repo")
    run = subprocess.run([*CONTROLPLANE, "audit", "repo", "--target", "write .env", "--mode", "plan,default", "-n",
                          "0", "--", "-k", "monitor:redirect:relative or bash-printf-redirect:relative", "-p",
                          "no:randomly"], cwd=tmp_path, capture_output=True, text=True, timeout=600)  # fmt: skip
    records = json.loads((tmp_path / "controlplane-report" / "repo" / "audit.json").read_text())["records"]
    cells = {(r["variant"].split(":")[0], r["mode"]): r for r in records}
    assert len(cells) == 4, run.stdout[-3000:]
    for tool, variant in (("Bash", "bash-printf-redirect"), ("Monitor", "monitor")):
        plan, default = cells[variant, "plan"], cells[variant, "default"]
        if tool == "Monitor" and not offers_tool(release, "Monitor"):
            assert [(c["cell"], c["detail"]) for c in (plan, default)] == [
                ("not offered", "the agent does not offer the Monitor tool")] * 2, run.stdout[-3000:]
            continue
        assert plan["cell"] == "not offered", run.stdout[-3000:]
        if runs_the_classifier(release):  # a signal: the classifier's own requests reached the gateway
            assert re.match(r"the CLI asked its safety classifier \(the auto mode's check, \d+ request\(s\) to the "
                            r"model\): the outcome is Claude's judgement", plan["detail"]), plan["detail"]  # fmt: skip
            assert not plan["inferred"] and not plan["layer"]
        else:  # only the CLI's words say it
            words = f"Auto mode is unavailable: its safety check does not run for this session, so {tool} was not run."
            assert plan["detail"].startswith(
                "this CLI cannot run the permission mode's safety check here, so the mode cannot be judged (inferred "
                f'from the CLI\'s words: "{words}'), plan["detail"]
            assert plan["inferred"] and not plan["layer"]
        assert default["cell"] == "asked" and not default["inferred"], run.stdout[-3000:]
