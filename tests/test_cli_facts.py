"""What the plugin knows of each Claude Code CLI release (cli_facts.py), checked against what is installed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import claude_agent_sdk._cli_version as bundled
import pytest

from pytest_controlplane.cli_facts import (
    BUNDLED_BY_SDK,
    MEASURED,
    outside_measured,
    pin_advice,
    sdk_bundling,
    version_key,
)

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
    assert outside_measured("2.1.300").startswith("Claude Code CLI 2.1.300 is not a release these facts were "
                                                  "measured on (2.1.332, 2.1.337): a layer credited from the CLI's")
    assert all(outside_measured(release) is None for release in MEASURED)
    assert bundled.__cli_version__ in MEASURED  # the pinned CLI is always measured


@pytest.mark.slow
def test_a_mode_whose_safety_check_cannot_run_here_is_not_applicable_in_the_clis_words(tmp_path):
    """Plan mode asks the auto mode's safety check before a Monitor command; with no such check in this session the
    CLI refuses the call ("Auto mode is unavailable: ..."), and CLI 2.1.337 then exits 1.  That proves nothing about
    the mode: the cell is not offered, in the CLI's words, never held by the mode nor errored.  The twin: the same
    variant under the default mode is judged (no hook matches Monitor, so the CLI asks)."""
    shutil.copytree(EXAMPLES / "settings_hooks" / "project", tmp_path / "repo")
    run = subprocess.run([*CONTROLPLANE, "audit", "repo", "--target", "write .env", "--mode", "plan,default", "-n",
                          "0", "--", "-k", "monitor:redirect:relative", "-p", "no:randomly"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)  # fmt: skip
    records = json.loads((tmp_path / "controlplane-report" / "repo" / "audit.json").read_text())["records"]
    cells = {r["mode"]: r for r in records}
    assert cells["plan"]["cell"] == "not offered", run.stdout[-3000:]
    assert cells["plan"]["detail"].startswith(
        "this CLI cannot run the permission mode's safety check here, so the mode cannot be judged (inferred from "
        "the CLI's words: \"Auto mode is unavailable: its safety check does not run for this session, so Monitor "
        "was not run.")
    assert cells["plan"]["inferred"] and not cells["plan"]["layer"]
    assert cells["default"]["cell"] == "asked" and not cells["default"]["inferred"], run.stdout[-3000:]
