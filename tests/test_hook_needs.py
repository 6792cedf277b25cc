"""What a command hook needs to start (agents/hook_needs.py), and the audit's header saying whether this machine has
it: a hook that cannot start fails open (tests/test_hook_faults.py), so it is said before any item runs."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_controlplane.agents.hook_needs import needs, needs_lines
from pytest_controlplane.agents.settings_hooks import CommandHook

JQ_GUARD = """#!/bin/bash
# Blocks .env (python3 is named in this comment only)
target=$(jq -r '.tool_input.command // .tool_input.file_path // empty')
case "$target" in *.env*) exit 2 ;; esac
"""


def hook(command: str) -> CommandHook:
    return CommandHook("project", ".claude/settings.json", "PreToolUse", "Bash", command)


def repo(tmp_path: Path) -> Path:
    hooks = tmp_path / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "guard.sh").write_text(JQ_GUARD)
    (hooks / "guard.js").write_text("#!/usr/bin/env node\nconst input = require('fs').readFileSync(0, 'utf8');\n")
    (hooks / "guard.py").write_text("import json, sys\njson.load(sys.stdin)\n")
    return tmp_path


def test_the_interpreter_and_the_programs_a_script_runs_are_read_from_the_command_and_the_script(tmp_path):
    root = repo(tmp_path)
    assert needs(hook('"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh'), root) == ["bash", "jq"]  # not the comment's
    assert needs(hook(".claude/hooks/guard.js"), root) == ["node"]  # by its #!/usr/bin/env
    assert needs(hook('python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.py'), root) == ["python3"]
    # quiet twins: a command of the shell's own, a script outside the repository
    assert needs(hook("echo ok"), root) == [] and needs(hook("/etc/hostname"), root) == []


def test_a_hook_whose_program_is_not_installed_here_says_it_cannot_start(tmp_path, monkeypatch):
    root = repo(tmp_path)
    guards = [hook('"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh'), hook("echo ok")]
    present = needs_lines(root, guards)
    assert present == ['hook `"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh` needs bash, jq: all installed here']
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "bash").symlink_to("/bin/bash")
    monkeypatch.setenv("PATH", str(bare))  # a CI image without jq
    assert needs_lines(root, guards) == [
        'hook `"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh` needs bash, jq: jq not installed here: it cannot start, '
        "and the CLI runs every call it guards (fail-open)"]  # fmt: skip


def test_the_audit_header_says_what_each_hook_needs_before_any_item_runs(pytester):
    root = repo(pytester.path / "repo")
    command = {"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh'}
    (root / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [command]}]}}))  # fmt: skip
    result = pytester.runpytest("--agent-audit", "repo", "--agent-audit-target", "read .env", "--collect-only")
    result.stdout.fnmatch_lines(['*hook `"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh` needs bash, jq: all installed*'])
