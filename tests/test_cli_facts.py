"""What the plugin knows of each Claude Code CLI release (cli_facts.py), checked against what is installed."""

from __future__ import annotations

from importlib.metadata import version

import claude_agent_sdk._cli_version as bundled

from pytest_controlplane.cli_facts import BUNDLED_BY_SDK, pin_advice, sdk_bundling, version_key


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
