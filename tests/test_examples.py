"""The example suites, replayed from their cassettes: they pass, and a broken guard is caught."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent
GUARD_TESTS = "examples/claude_guard/test_guard.py"  # its bypass variants run in `make demo`


def patch(path: Path, old: str, new: str) -> None:
    """Break an example on purpose: replace `old` (which must be there) by `new`."""
    text = path.read_text()
    assert old in text, f"{path.name} no longer holds {old!r}: the test would break nothing"
    path.write_text(text.replace(old, new))


def copy_example(pytester: pytest.Pytester, name: str) -> Path:
    pytester.makeini("[pytest]\n")  # rootdir = pytester.path, so cassettes resolve as in the repo
    shutil.copytree(REPO / "examples" / name, pytester.path / "examples" / name,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "cassettes" / "examples" / name, pytester.path / "cassettes" / "examples" / name)
    return pytester.path / "examples" / name


@pytest.mark.slow
def test_claude_guard_catches_a_hook_matcher_that_misses_write(pytester):
    example = copy_example(pytester, "claude_guard")
    pytester.runpytest(GUARD_TESTS, "-p", "no:cacheprovider").assert_outcomes(passed=3)

    guard = example / "guard.py"
    patch(guard, 'WRITING_TOOLS = "Write|Edit|NotebookEdit"', 'WRITING_TOOLS = "Edit|NotebookEdit"')
    result = pytester.runpytest(GUARD_TESTS, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)  # .env and secrets/ now get written
    result.stdout.fnmatch_lines([
        "*ReplayMiss: Request #2 (POST /v1/messages?beta=true) matches no unplayed interaction*",
        '*-*"content": "PreToolUse:Write hook error: guard: {{workspace}}/.env is protected",',
        '*+*"content": "File created successfully at: {{workspace}}/.env*',
    ])
    cassettes = sorted((pytester.path / "cassettes").rglob("*.yaml"))
    assert all(p.read_bytes() == (REPO / p.relative_to(pytester.path)).read_bytes() for p in cassettes)


def test_quickstart_catches_a_guard_that_allows_everything(pytester):
    example = copy_example(pytester, "quickstart")
    pytester.runpytest("examples/quickstart", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    agent = example / "notes_agent.py"
    patch(agent, 'return f"refused: {path} is outside notes/"', "return None")
    result = pytester.runpytest("examples/quickstart", "-p", "no:cacheprovider")
    assert result.parseoutcomes()["failed"] == 1
    result.stdout.fnmatch_lines(['*+*"content": "wrote notes/../.env"*'])


@pytest.mark.slow
def test_claude_guard_against_cassettes_of_another_cli_version(pytester):
    """The CLI here is not the one the cassettes were recorded with: say so, and touch nothing."""
    copy_example(pytester, "claude_guard")
    cassette = pytester.path / "cassettes/examples/claude_guard/test_guard/test_ordinary_note_is_written.yaml"
    patch(cassette, "claude_cli_version: 2.1.332", "claude_cli_version: 2.1.300")
    before = cassette.read_bytes()
    result = pytester.runpytest(GUARD_TESTS, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*CassetteVersionMismatch: Cassette *test_ordinary_note_is_written.yaml was recorded "
                                 "with Claude Code CLI 2.1.300, but this run uses CLI 2.1.332; its prompts differ*",
                                 "*Re-record it: pytest --agent-mode=record 'examples/claude_guard/test_guard.py::"
                                 "test_ordinary_note_is_written' — or pin, in your project's test dependencies, the "
                                 "claude-agent-sdk release that bundles CLI 2.1.300*"])
    assert cassette.read_bytes() == before


@pytest.mark.slow
def test_project_hooks_catches_a_matcher_that_forgets_the_shell(pytester):
    example = copy_example(pytester, "project_hooks")
    pytester.runpytest("examples/project_hooks", "-p", "no:cacheprovider").assert_outcomes(passed=3)

    settings = example / "project" / ".claude" / "settings.json"
    patch(settings, '"Write|Edit|NotebookEdit|Bash"', '"Write|Edit|NotebookEdit"')
    result = pytester.runpytest("examples/project_hooks", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*test_shell_route_to_secrets_is_blocked_too*",
        "*ReplayMiss: Request #2 (POST /v1/messages?beta=true) matches no unplayed interaction*",
        '*-*"content": "PreToolUse:Bash hook error: *protect.sh: .env and secrets/ are off limits*',
    ])


def test_cache_investigation_catches_a_tool_that_stops_redacting(pytester):
    example = copy_example(pytester, "cache_investigation")
    pytester.runpytest("examples/cache_investigation", "-p", "no:cacheprovider").assert_outcomes(passed=7)

    agent = example / "cache_agent.py"
    patch(agent, "return redact(content) if", "return content if")
    result = pytester.runpytest("examples/cache_investigation", "-p", "no:cacheprovider")
    # The agent gets a 403 for the request the cassette does not hold (the test fails); the gateway's
    # teardown says why, with the diff: the token went out.
    result.assert_outcomes(passed=6, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_the_config_token_never_reaches_the_model*",
                                 "*ReplayMiss: Request #2 (POST /v1/messages) matches no unplayed interaction*",
                                 "*-*api_token = <redacted>*", "*+*api_token = cp-canary-5f0c2b7e*"])


@pytest.mark.slow
def test_redaction_catches_a_base64_copy_once_the_shell_guard_is_gone(pytester):
    example = REPO / "examples" / "redaction"
    shutil.copytree(example, pytester.path / "redaction", ignore=shutil.ignore_patterns("__pycache__"))
    pytester.runpytest("redaction", "-p", "no:cacheprovider").assert_outcomes(passed=2)

    plane = pytester.path / "redaction" / "control_plane.py"
    patch(plane, 'SHELL_GUARDED = "Bash"', 'SHELL_GUARDED = "NoSuchTool"')
    result = pytester.runpytest("redaction", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)  # the pattern redaction still catches printenv's NAME=value
    result.stdout.fnmatch_lines([
        "*CanaryLeaked: Canary canary_secret leaked to 5 place(s):",
        "*request #3, messages?5?.content?0?.content: canary_secret canary, base64 — *QVBJX0tFWT1j«canary_secret "
        "canary»ClJFR0lPTj1ldS13ZXN0*",
        "*SDK message #5 (UserMessage), content?0?.content: canary_secret canary, base64*",
    ])
    result.stdout.fnmatch_lines(["*transcript $CLAUDE_CONFIG_DIR/projects/*.jsonl, line *: canary_secret canary, "
                                 "base64*"])
    assert "cp-canary-" not in "\n".join(line for line in result.stdout.lines if line.startswith("E "))
