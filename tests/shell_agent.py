"""The agent the command-agent suites drive: a process with one shell tool, in no SDK at all.

Its own control plane is two knobs from the environment: GUARD (a substring it refuses to run, as
many rules do) and AGENT_REDACTS=1 (it replaces SERVICE_TOKEN's value in what a command printed).
It logs each command's output on its stdout.  `run(pytester, monkeypatch, tests)` puts it, the
conftest defining the `agent` fixture (and a `shell(*commands)` helper) and `tests` into a pytester
directory and runs them.
"""

from __future__ import annotations

import pytest

SCRIPT = r'''#!/usr/bin/env python3
import json, os, subprocess, sys, urllib.request

GUARD = os.environ.get("GUARD", "")
REDACT = os.environ.get("AGENT_REDACTS") == "1"
messages = [{"role": "user", "content": sys.stdin.read()}]
tools = [{"name": "Bash", "description": "Run a shell command.", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}}}}]
while True:
    request = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
        data=json.dumps({"model": "claude-x", "max_tokens": 256, "tools": tools, "messages": messages}).encode(),
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json"})
    reply = json.load(urllib.request.urlopen(request))
    messages.append({"role": "assistant", "content": reply["content"]})
    calls = [block for block in reply["content"] if block["type"] == "tool_use"]
    if not calls:
        break
    results = []
    for call in calls:
        command = call["input"].get("command")
        if call["name"] != "Bash" or command is None:
            results.append({"type": "tool_result", "tool_use_id": call["id"], "is_error": True,
                            "content": f"no such tool: {call['name']}"})
            continue
        if GUARD and GUARD in command:
            results.append({"type": "tool_result", "tool_use_id": call["id"], "is_error": True,
                            "content": f"guard: {GUARD!r} is not allowed"})
            continue
        done = subprocess.run(command, shell=True, capture_output=True, text=True, executable="/bin/bash")
        out = done.stdout + done.stderr
        if REDACT and os.environ.get("SERVICE_TOKEN"):
            out = out.replace(os.environ["SERVICE_TOKEN"], "[redacted]")
        print(out, end="")  # the agent's own log
        results.append({"type": "tool_result", "tool_use_id": call["id"], "content": out})
    messages.append({"role": "user", "content": results})
'''

CONFTEST = '''
import os, sys
from pathlib import Path

import pytest
from pytest_controlplane import CommandAgent


@pytest.fixture
def agent():
    return CommandAgent([sys.executable, str(Path(__file__).parent / "shell_agent.py")],
                        env={name: os.environ.get(name, "") for name in ("GUARD", "AGENT_REDACTS")})


@pytest.fixture
def shell(agent_session, scripted_model):
    """Run these shell commands as the agent's tool calls, one model turn each."""
    from pytest_controlplane import text, tool_use

    def run(*commands):
        scripted_model([tool_use("Bash", {"command": c}) for c in commands] + [text("done")])
        return agent_session.run("Go.")
    return run
'''


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tests: str, *args: str, name: str = "test_shell",
        guard: str = "", redacts: bool = False) -> pytest.RunResult:
    """Run `tests` (the source of a test module called `name`) against this agent, with its two knobs set."""
    monkeypatch.setenv("GUARD", guard)
    monkeypatch.setenv("AGENT_REDACTS", "1" if redacts else "0")
    pytester.path.joinpath("shell_agent.py").write_text(SCRIPT)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**{name: tests})
    return pytester.runpytest("-p", "no:cacheprovider", *args)
