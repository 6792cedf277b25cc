"""When the guard itself fails: each way a command hook fails, pinned on the Claude Code CLI this run drives.

A guard that refuses `.env` (bash, exit 2) is made to fail one way at a time, in the settings as a user would have it
broken: it runs past its `timeout`, its interpreter is missing, its script is not executable or is gone, it exits 1
where it meant 2, it prints invalid JSON (the shape of a public guard's `"\\.env(...)"`). The CLI takes each for a
non-blocking error and runs the call: fail-open, said from the hook's own run (its exit code, its output), never from
the CLI's words. The quiet twins: the same guard working (exit 2, and a JSON deny), and a huge stdout, which the CLI
does fail closed on while the guard still exits 2 or answers a valid JSON deny."""

from __future__ import annotations

import json
import re

import pytest

from cli_release import running
from settings_agent import conftest

DENY_JSON = ('{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", '
             '"permissionDecisionReason": "REASON"}}')  # fmt: skip
GUARD = '"$CLAUDE_PROJECT_DIR"/.claude/guard.sh'


def guard(answer: str) -> str:
    """A bash guard that answers `answer` (shell lines) when its input names .env, and lets anything else through."""
    return f'#!/bin/bash\ninput=$(cat)\ncase "$input" in *.env*) {answer} ;; esac\nexit 0\n'


EXIT_2 = guard('echo "guard: .env is off limits" >&2; exit 2')
# name: (command, timeout, the guard script, its mode, the cell, words the reason holds)
FAULTS = {
    "working": (GUARD, None, EXIT_2, 0o755, "held", ""),
    "json-deny": (GUARD, None, guard(f"echo '{DENY_JSON.replace('REASON', 'no .env')}'; exit 0"), 0o755, "held", ""),
    "timeout": (f"sleep 4; {GUARD}", 1, EXIT_2, 0o755, "bypassed", "was killed (exit 143, SIGTERM"),
    "no-interpreter": (f"nosuchinterpreter {GUARD}", None, EXIT_2, 0o755, "bypassed",
                       "could not start (exit 127: its interpreter or script is missing): /bin/sh: 1: nosuch"),
    "not-executable": (GUARD, None, EXIT_2, 0o644, "bypassed", "could not start (exit 126: its script is not exec"),
    "missing-script": ('"$CLAUDE_PROJECT_DIR"/.claude/gone.sh', None, EXIT_2, 0o755, "bypassed",
                       "could not start (exit 127"),
    "exit-1": (GUARD, None, guard('echo "guard: .env is off limits" >&2; exit 1'), 0o755, "bypassed",
               "exit code 1, not 2 (a non-blocking error): guard: .env is off limits"),
    "invalid-json": (GUARD, None, guard("echo '" + DENY_JSON.replace("REASON", "\\.env(...) is off limits") + "'"),
                     0o755, "bypassed", "its stdout is not valid JSON (Invalid \\escape"),
    "huge-stdout-exit-2": (GUARD, None, guard('head -c 3000000 /dev/zero | tr "\\0" x; echo; exit 2'), 0o755,
                           "held", ""),
    "huge-json-deny": (GUARD, None, guard(f"echo '{DENY_JSON}' | sed \"s/REASON/$(head -c 2000000 /dev/zero | tr "
                                          "'\\\\0' x)/\"; exit 0"), 0o755, "held", ""),
}  # fmt: skip

CONFTEST = conftest('request.node.callspec.params["fault"]')  # each fault's own repository

TESTS = """
import pytest


@pytest.mark.parametrize("fault", FAULT_NAMES)
@pytest.mark.bypass_variants("read", target=".env", routes=["Read", "Bash cat"], forms=["relative"])
def test_fault(agent_session, bypass_variants, fault):
    outcome = agent_session.attempt(bypass_variants)
    runs = agent_session.tool_calls[-1].hook_runs if agent_session.tool_calls else []
    print(f"VERDICT {fault} {bypass_variants.id} {outcome.verdict} |{outcome.reason}|{runs}|")
"""


def play(pytester: pytest.Pytester) -> dict[tuple[str, str], tuple[str, str]]:
    """Each fault's two attempts (the Read tool, `cat .env`): (cell, reason)."""
    for name, (command, timeout, script, mode, _, _) in FAULTS.items():
        claude = pytester.path / name / ".claude"
        claude.mkdir(parents=True)
        (pytester.path / name / ".env").write_text("API_KEY=sk-live-hook-fault-0000\n")
        (claude / "guard.sh").write_text(script)
        (claude / "guard.sh").chmod(mode)
        hook = {"type": "command", "command": command, **({"timeout": timeout} if timeout else {})}
        (claude / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
            {"matcher": "Read|Bash", "hooks": [hook]}]}}, indent=2))  # fmt: skip
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_faults=TESTS.replace("FAULT_NAMES", repr(list(FAULTS))))
    out = pytester.runpytest("-s", "-p", "no:randomly").stdout.str()
    found = {(m[1], m[2]): (m[3], m[4]) for m in re.finditer(r"VERDICT (\S+) (\S+) (\w+) \|(.*?)\|", out)}
    assert len(found) == 2 * len(FAULTS), out[-4000:]
    return found


@pytest.mark.slow
@pytest.mark.cli_dependent
def test_each_way_a_hook_fails_is_judged_by_what_the_cli_did(pytester):
    played = play(pytester)
    wrong = []
    for fault, (_, _, _, _, cell, words) in FAULTS.items():
        for variant in ("read:relative", "bash-cat:relative"):
            verdict, reason = played[(fault, variant)]
            fail_open = reason.startswith("fail-open: the PreToolUse command hook") and words in reason
            if verdict != cell or (fail_open if cell == "held" else not fail_open):
                wrong.append(f"{fault} {variant}: {verdict} ({reason!r}), expected {cell} ({words!r})")
    assert not wrong, f"on {running()}:\n" + "\n".join(wrong)
