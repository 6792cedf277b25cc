"""The workspace as its owner sees it, or as a fresh clone does (`--workspace-trust owner|clone`, ini workspace_trust).

Measured on CLI 2.1.332: in a workspace it has not been told to trust, the CLI prints "Ignoring N permissions.allow
entries ... this workspace has not been trusted" and asks instead of allowing.  The owner's checkout is trusted, so by
default each world seeds `projects[<realpath of the workspace>].hasTrustDialogAccepted` in the config dir's
`.claude.json`; `clone` leaves it out, the view a poisoned repository meets.  A running CLI keeps the view it started
with, so a warm pool is one view's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from pytest_controlplane.agents.settings_hooks import allow_in_force, project_settings, trust_line
from pytest_controlplane.agents.world import World
from pytest_controlplane.audit import page, regression
from pytest_controlplane.audit.command import pytest_args
from pytest_controlplane.audit.matrix import Matrix
from pytest_controlplane.config import resolve_workspace_trust
from pytest_controlplane.errors import ConfigError

ALLOW = {"permissions": {"allow": ["Bash(touch:*)"]}}  # a harmless command the team's allow list lets through
CONFTEST = """
import pytest
from claude_agent_sdk import ClaudeAgentOptions
from pytest_controlplane import ClaudeAgent


@pytest.fixture
def agent():
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(permission_mode="default", setting_sources=["project"]))


@pytest.fixture
def agent_workspace_template(request):
    return request.config.rootpath / "project"
"""
TESTS = '''
import pytest
from pytest_controlplane import tool_use


def touch(agent_session):
    call = agent_session.attempt(tool_use("Bash", {"command": "touch allowed.txt"}))
    ran = (agent_session.workspace / "allowed.txt").exists()
    print(f"CALL {call.verdict} ran={ran} warm={agent_session.warm}")


def test_cold(agent_session):
    touch(agent_session)


@pytest.mark.agent_warm
def test_warm(agent_session):
    touch(agent_session)
'''


@pytest.fixture
def trusted(pytester):
    """A project whose `.claude/settings.json` allows `Bash(touch:*)`, run under default permission mode; the CALL
    line of each test (cold, warm) by name, and the run."""
    (pytester.path / "project" / ".claude").mkdir(parents=True)
    (pytester.path / "project" / ".claude" / "settings.json").write_text(json.dumps(ALLOW))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_trust=TESTS)

    def run(*args: str) -> tuple[dict[str, str], pytest.RunResult]:
        result = pytester.runpytest("-p", "no:randomly", "-rA", *args)
        calls: dict[str, str] = {}
        test = ""
        for line in result.outlines:
            started = re.match(r"_+ (test_\w+) _+$", line)
            test = started.group(1) if started else test
            if line.startswith("CALL "):
                calls[test] = line
        return calls, result

    return run


@pytest.mark.slow
def test_the_owner_view_honours_the_allow_list_and_a_clone_asks(trusted):
    calls, result = trusted()
    result.assert_outcomes(passed=2)
    assert calls == {"test_cold": "CALL allowed ran=True warm=False",
                     "test_warm": "CALL allowed ran=True warm=True"}, result.stdout.str()[-3000:]
    calls, result = trusted("--workspace-trust", "clone")
    result.assert_outcomes(passed=2)
    assert calls == {"test_cold": "CALL asked ran=False warm=False",
                     "test_warm": "CALL asked ran=False warm=True"}, result.stdout.str()[-3000:]


@pytest.mark.slow
def test_the_ini_twin_sets_the_view_and_the_flag_wins(trusted, pytester):
    pytester.makeini("[pytest]\nworkspace_trust = clone\n")
    calls, result = trusted("-k", "cold")
    assert calls == {"test_cold": "CALL asked ran=False warm=False"}, result.stdout.str()[-3000:]
    calls, result = trusted("-k", "cold", "--workspace-trust=owner")
    assert calls == {"test_cold": "CALL allowed ran=True warm=False"}, result.stdout.str()[-3000:]


def test_a_bad_value_is_a_usage_error_naming_the_views(pytester):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest("--workspace-trust", "stranger")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--workspace-trust*invalid choice*'stranger'*owner*clone*"])
    pytester.makeini("[pytest]\nworkspace_trust = stranger\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option workspace_trust: 'stranger' is not one of owner, clone.*"])
    with pytest.raises(ConfigError, match="is not one of owner, clone"):
        resolve_workspace_trust(cli="stranger")
    assert resolve_workspace_trust() == "owner" and resolve_workspace_trust(cli="owner", ini="clone") == "owner"


def test_the_help_names_the_option_and_its_ini_twin(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--workspace-trust={owner,clone}*",
                                 "*poisoned repository meets); ini: workspace_trust.",
                                 "  workspace_trust (string):",
                                 "*owner (default) or clone: how the Claude Code CLI sees*"])


# --- the library -----------------------------------------------------------------------------------------------------


def _projects(world: World) -> dict:
    return json.loads((world.config_dir / ".claude.json").read_text()).get("projects", {})


def test_a_world_seeds_the_owners_trust_under_the_workspaces_real_path(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    world = World.create(tmp_path / "link" / "w", "t")  # the CLI keys its trust by the real path
    workspace = os.path.realpath(world.workspace)
    assert world.trust == "owner" and workspace.startswith(str((tmp_path / "real").resolve()))
    assert _projects(world) == {workspace: {"hasTrustDialogAccepted": True}}
    config = json.loads((world.config_dir / ".claude.json").read_text())
    assert config["userID"] == world.user_id and config["hasCompletedOnboarding"] is True
    clone = World.create(tmp_path / "clone", "t", trust="clone")
    assert clone.trust == "clone" and _projects(clone) == {}
    again = World.create(tmp_path / "link" / "w", "t", trust="clone")  # a world made again in another view
    assert _projects(again) == {} and json.loads((again.config_dir / ".claude.json").read_text())["userID"]
    with pytest.raises(ConfigError, match="choose one of owner, clone"):
        World.create(tmp_path / "bad", "t", trust="stranger")


def test_a_warm_pool_is_one_trust_views(tmp_path, monkeypatch):
    """A CLI keeps the trust it started with: a pool made for one view never plays the other."""
    from claude_agent_sdk import ClaudeAgentOptions

    from pytest_controlplane import ClaudeAgent
    from pytest_controlplane.agents import warm

    made = []

    class Pool:
        broken = False

        def __init__(self, agent, root, template, *, network=False, trust="owner"):
            self.world = World.create(root, "controlplane-warm", template=template, trust=trust)
            made.append(self)

        def spoiled(self):
            return False

        def reset(self, template):
            pass

        def close(self):
            pass

    monkeypatch.setattr(warm, "WarmPool", Pool)
    monkeypatch.setattr(warm, "_POOLS", {})
    agent = ClaudeAgent(lambda workspace: ClaudeAgentOptions(setting_sources=["project"]))
    owner = warm.pool_for(agent, None, tmp_path, trust="owner")
    clone = warm.pool_for(agent, None, tmp_path, trust="clone")
    assert owner is not clone and len(made) == 2
    assert warm.pool_for(agent, None, tmp_path, trust="owner") is owner
    assert warm.pool_for(agent, None, tmp_path, trust="clone") is clone and len(made) == 2
    assert _projects(owner.world) == {str(owner.world.workspace): {"hasTrustDialogAccepted": True}}
    assert _projects(clone.world) == {}


# --- what the audit says ---------------------------------------------------------------------------------------------


def test_allow_entries_are_listed_only_where_the_cli_honours_them(tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"permissions": {**ALLOW["permissions"],
                                                                                    "deny": ["Read(./.env)"]}}))
    (tmp_path / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {"allow": ["Bash(ls:*)"]}}))
    shared, local = project_settings(tmp_path)
    assert [allow_in_force(tmp_path, found, "owner") for found in (shared, local)] == [True, True]
    # A clone: the shared file's entries are ignored; an untracked local file (only the owner's checkout has one) is
    # honoured, a committed one is not.
    assert [allow_in_force(tmp_path, found, "clone") for found in (shared, local)] == [False, True]
    git = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, env=git)
    subprocess.run(["git", "add", ".claude/settings.local.json"], cwd=tmp_path, check=True, env=git)
    assert allow_in_force(tmp_path, local, "clone") is False
    assert shared.describe(allow_in_force=False) == (
        ".claude/settings.json: permissions.allow: 1 entry the CLI ignores (the workspace is not trusted); "
        "permissions.deny: Read(./.env)"
    )
    assert shared.describe() == (
        ".claude/settings.json: permissions.allow: Bash(touch:*); permissions.deny: Read(./.env)"
    )
    assert trust_line("owner") == "workspace trust: owner (permissions.allow in force)"
    assert trust_line("clone") == "workspace trust: clone (the CLI ignores permissions.allow)"


def test_the_audit_header_names_the_view_it_plays(pytester):
    (pytester.path / "repo" / ".claude").mkdir(parents=True)
    (pytester.path / "repo" / ".claude" / "settings.json").write_text(json.dumps(ALLOW))
    owner = pytester.runpytest("--agent-audit", "repo", "--collect-only", "-o", "agent_audit_targets=write .env")
    owner.stdout.fnmatch_lines(["workspace trust: owner (permissions.allow in force)", "settings in repo:",
                                "  .claude/settings.json: permissions.allow: Bash(touch:*)"])
    clone = pytester.runpytest("--agent-audit", "repo", "--collect-only", "-o", "agent_audit_targets=write .env",
                               "--workspace-trust", "clone")
    clone.stdout.fnmatch_lines(["workspace trust: clone (the CLI ignores permissions.allow)", "settings in repo:",
                                "  .claude/settings.json: permissions.allow: 1 entry the CLI ignores *"])
    assert "Bash(touch:*)" not in clone.stdout.str()


def test_controlplane_audit_passes_the_view_to_pytest_and_names_it(tmp_path):
    assert pytest_args(["repo", "--workspace-trust", "clone", "-n", "0"], tmp_path)[-2:] == [
        "--workspace-trust", "clone"]
    assert "--workspace-trust" not in pytest_args(["repo", "-n", "0"], tmp_path)
    run = subprocess.run([sys.executable, "-m", "pytest_controlplane.cli", "audit", "--workspace-trust", "stranger"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "owner" in run.stderr and "clone" in run.stderr
    meta = {"directory": "repo", "workspace_trust": "clone (the CLI ignores permissions.allow)"}
    assert "workspace trust: clone (the CLI ignores permissions.allow)" in page.render(
        Matrix.of([]), meta=meta, page=tmp_path / "audit.html")
    assert "pytest --workspace-trust clone" in regression.render([], meta=meta)
    assert "--workspace-trust" not in regression.render([], meta={**meta, "workspace_trust": "owner (...)"})


@pytest.mark.slow
def test_the_audits_files_say_which_view_it_played(pytester):
    """The matrix page, the JSON's meta and the command that reproduces it, from a tiny clone-view audit."""
    (pytester.path / "repo" / ".claude").mkdir(parents=True)
    (pytester.path / "repo" / ".claude" / "settings.json").write_text(json.dumps(ALLOW))
    out = pytester.path / "out"
    result = pytester.runpytest("--agent-audit", "repo", "-o", "agent_audit_targets=write .env",
                                "-o", "agent_audit_modes=default", "--agent-audit-route", "shell",
                                "--agent-audit-out", str(out), "--workspace-trust", "clone",
                                "-k", "bash-cp:relative-default")
    assert sum(result.parseoutcomes().get(k, 0) for k in ("passed", "failed")) == 1, result.stdout.str()[-2000:]
    meta = json.loads((out / "audit.json").read_text())["meta"]
    assert meta["workspace_trust"] == "clone (the CLI ignores permissions.allow)", result.stdout.str()[-2000:]
    assert "--workspace-trust clone" in meta["command"]
    assert "workspace trust: clone" in (out / "audit.html").read_text()
    assert "workspace trust clone (the CLI ignores permissions.allow)" in (out / "summary.md").read_text()
    assert "pytest --workspace-trust clone" in (out / "test_audit_regression.py").read_text()
