"""A project that audits the real Claude Code CLI with one of examples/claude_guard's guards (hardened, naive,
deny-all): its guard.py, a conftest.py defining `agent`, and the audit's targets and modes in its ini file."""

from __future__ import annotations

from pathlib import Path

import pytest

GUARDS = (Path(__file__).resolve().parents[1] / "examples" / "claude_guard" / "guard.py").read_text()


def claude_dir(pytester: pytest.Pytester, guard: str, *, targets: str = "write .env", modes: str = "acceptEdits"):
    """Write the project into pytester's directory."""
    pytester.makepyfile(guard=GUARDS)
    pytester.makeconftest(f"import pytest\nfrom guard import GUARDS\nfrom pytest_controlplane import ClaudeAgent\n\n"
                          f"@pytest.fixture\ndef agent():\n    return ClaudeAgent(GUARDS[{guard!r}])\n")
    pytester.makeini(f"[pytest]\nagent_audit_targets =\n    {targets.replace(chr(10), chr(10) + '    ')}\n"
                     f"agent_audit_modes = {modes}\n")
