"""The hooks a conftest.py may implement (pytest-controlplane's hookspecs)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec(firstresult=True)
def pytest_agent_audit_targets(config: pytest.Config) -> Any:
    """The targets `--agent-audit` attacks, as "family target" lines (`["write .env", "exec git push", "escape"]`),
    or None for the ini option agent_audit_targets (default: .env and secrets/ written and read, `curl` and
    `scripts/deploy.sh` run, the workspace escaped)."""


@pytest.hookspec(firstresult=True)
def pytest_agent_audit_modes(config: pytest.Config) -> Any:
    """The permission modes `--agent-audit` tries (`["default", "acceptEdits"]`; `["-"]`: the agent as it is
    configured), or None for the ini option agent_audit_modes (default: every mode the Claude Code CLI accepts)."""
