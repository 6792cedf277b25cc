"""The seed agent, run as the process it is: its own argv, its own session files under sessions/."""

import sys
from pathlib import Path

import pytest

from pytest_controlplane import CommandAgent

AGENT = Path(__file__).with_name("agent.py")
SEED_SAVE = "    path.write_text(text)  # the seed's save\n"
ATOMIC_SAVE = "    write_atomically(path, text)  # the fix\n"


def seed_agent(script: Path) -> CommandAgent:
    """`script --session NAME` starts or resumes the session NAME; its messages are in sessions/NAME.json."""
    return CommandAgent(lambda session_id, resume, fork: [sys.executable, str(script), "--session", resume or session_id],
                        transcript=lambda world, session_id: world.workspace / "sessions" / f"{session_id}.json")


@pytest.fixture
def agent():
    """The agent as the seed wrote it."""
    return seed_agent(AGENT)


@pytest.fixture
def fixed_agent(tmp_path):
    """The same agent with its one-line fix: the save goes through write_atomically."""
    source = AGENT.read_text()
    assert source.count(SEED_SAVE) == 1, "agent.py no longer has the seed's save line"
    fixed = tmp_path / "agent.py"
    fixed.write_text(source.replace(SEED_SAVE, ATOMIC_SAVE))
    return seed_agent(fixed)
