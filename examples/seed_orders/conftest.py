"""The order desk two ways: as the process it is (a CommandAgent) and as its tool run by our loop (a LoopAgent), so
each test runs for both."""

import sys
from pathlib import Path

import pytest
from order_desk import SYSTEM, TOOLS, get_order

from pytest_controlplane import CommandAgent, LoopAgent

AGENT = Path(__file__).with_name("order_desk.py")


def argv(session_id, resume, fork):
    """`--session NAME` starts or resumes NAME; a fork is a new session `--fork-from` its parent."""
    if fork:
        return [sys.executable, str(AGENT), "--session", session_id, "--fork-from", resume]
    return [sys.executable, str(AGENT), "--session", resume or session_id]


def loop_options(workspace):
    """The same system prompt, tool and tool function, in our loop."""
    tools = {"get_order": lambda order_id: get_order(order_id, workspace / "orders.json")}
    return {"system": SYSTEM, "tools": TOOLS, "tool_impls": tools}


@pytest.fixture(params=["command", "loop"])
def agent(request):
    """The order desk as a process (its sessions in sessions/<name>.json) or in our loop (in our session store)."""
    if request.param == "command":
        return CommandAgent(argv, transcript=lambda world, name: world.workspace / "sessions" / f"{name}.json")
    return LoopAgent(loop_options)
