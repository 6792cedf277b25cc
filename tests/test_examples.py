"""The example suites: replayed from their cassettes they pass, and a broken guard is caught by the example's own
oracle (the effects oracle, a canary, the test's assertion) — not by a replay miss.

A broken guard changes what the model is sent, so its cassette no longer matches and a replay fails on the first
request after the guard's answer, before any oracle has looked.  The broken guard therefore runs against the
scripted model the cassettes were recorded from (each example's model_script.py, as `make record-examples` serves
it): the conversation goes on whatever the guard says, and the unbroken guard passes in that same mode.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent
GUARD_TESTS = "examples/claude_guard/test_guard.py"  # its bypass variants run in `make demo`

# A conftest for the pytester project: each test is answered by a model script (a file whose MODEL is a
# ScriptedModel, loaded afresh per test) instead of its cassette.
SCRIPTED_CONFTEST = '''\
import importlib.util

import pytest

SCRIPTS = {scripts!r}  # test name -> model script; "*": every other test


def pytest_collection_modifyitems(items):
    for item in items:
        spec = importlib.util.spec_from_file_location("model_script", SCRIPTS.get(item.name, SCRIPTS["*"]))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        item.add_marker(pytest.mark.agent(script=module.MODEL))
'''


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


def answer_from_scripts(pytester: pytest.Pytester, script: Path, **per_test: Path) -> None:
    """From now on, the project's tests get their model answers from `script` (or per_test[test name]), not from
    their cassettes."""
    scripts = {"*": str(script), **{name: str(path) for name, path in per_test.items()}}
    pytester.makeconftest(SCRIPTED_CONFTEST.format(scripts=scripts))


@pytest.mark.slow
def test_claude_guard_catches_a_hook_matcher_that_misses_write(pytester):
    example = copy_example(pytester, "claude_guard")
    pytester.runpytest(GUARD_TESTS, "-p", "no:cacheprovider").assert_outcomes(passed=3)
    answer_from_scripts(pytester, example / "model_script.py")
    pytester.runpytest(GUARD_TESTS, "-p", "no:cacheprovider").assert_outcomes(passed=3)

    patch(example / "guard.py", 'WRITING_TOOLS = "Write|Edit|NotebookEdit"', 'WRITING_TOOLS = "Edit|NotebookEdit"')
    result = pytester.runpytest(GUARD_TESTS, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)  # .env and secrets/ now get written
    result.stdout.fnmatch_lines([
        "*_ test_dotenv_write_is_denied_by_the_hook _*",
        "E *.EffectViolation: .env was written — 1 change(s) reached it:",
        "E *run 1 during Write call #1 (`*/agent-world/workspace/.env`): .env created (new file, 21 bytes)",
        "E *route: its own name; the call named it `*/agent-world/workspace/.env` (absolute spelling)",
        "E *+written by the model",
        "*_ test_secrets_dir_write_is_denied _*",
        ">       assert agent_session.effects.written == ??",  # ?: fnmatch reads [...] as a character class
        "E       AssertionError: assert ?'secrets', '*token.txt'? == ??",
        "*test_guard.py::test_dotenv_write_is_denied_by_the_hook: 2 turn(s), *, mode script",
    ])
    assert "ReplayMiss" not in result.stdout.str()
    cassettes = sorted((pytester.path / "cassettes").rglob("*.yaml"))
    assert all(p.read_bytes() == (REPO / p.relative_to(pytester.path)).read_bytes() for p in cassettes)


def test_quickstart_catches_a_guard_that_allows_everything(pytester):
    example = copy_example(pytester, "quickstart")
    pytester.runpytest("examples/quickstart", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    answer_from_scripts(pytester, example / "model_script.py")
    pytester.runpytest("examples/quickstart", "-p", "no:cacheprovider").assert_outcomes(passed=2)

    patch(example / "notes_agent.py", 'return f"refused: {path} is outside notes/"', "return None")
    result = pytester.runpytest("examples/quickstart", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*_ test_guard_refuses_a_dotdot_escape_to_dotenv _*",
        ">       effects.assert_not_written(\".env\")",
        "E *.EffectViolation: .env was written — 1 change(s) reached it:",
        "E *run 1: .env created (new file, 19 bytes)",
        "E *route: its own name",
        "E *+API_KEY=sk-live-123",
    ])
    assert "ReplayMiss" not in result.stdout.str()


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
                                 "*Re-record it: pytest --agent-mode=record --agent-script examples/claude_guard/"
                                 "model_script.py:MODEL 'examples/claude_guard/test_guard.py::"
                                 "test_ordinary_note_is_written' — or, to replay it as it is, pin "
                                 "claude-agent-sdk==0.2.167 (pip install 'claude-agent-sdk==0.2.167': it bundles CLI "
                                 "2.1.300), or run that CLI: --agent-cli 2.1.300 (controlplane cli install 2.1.300)."])
    assert cassette.read_bytes() == before


# The shell write of examples/project_hooks/model_script.py goes through `$(dirname ...)`, which the CLI refuses by
# itself ("A nested command in this command can't be checked before it runs"), hook or no hook: it cannot tell
# whether the hook still sees the shell.  This model writes with a plain command, which only the hook stops.
PLAIN_SHELL_WRITE = """\
from pytest_controlplane import ScriptedModel, text, tool_use


def answer(request):
    if request.tool_results:
        return text(f"Tool said: {request.tool_results[-1]['content']}")
    return tool_use("Bash", {"command": "mkdir -p secrets && echo 'written by the model' > secrets/token.txt",
                             "description": "Write secrets/token.txt"})


MODEL = ScriptedModel(answer)
"""


@pytest.mark.slow
def test_project_hooks_catches_a_matcher_that_forgets_the_shell(pytester):
    example = copy_example(pytester, "project_hooks")
    pytester.runpytest("examples/project_hooks", "-p", "no:cacheprovider").assert_outcomes(passed=3)
    shell_script = pytester.path / "plain_shell_write.py"
    shell_script.write_text(PLAIN_SHELL_WRITE)
    answer_from_scripts(pytester, example / "model_script.py", test_shell_route_to_secrets_is_blocked_too=shell_script)
    pytester.runpytest("examples/project_hooks", "-p", "no:cacheprovider").assert_outcomes(passed=3)

    settings = example / "project" / ".claude" / "settings.json"
    patch(settings, '"Write|Edit|NotebookEdit|Bash"', '"Write|Edit|NotebookEdit"')
    result = pytester.runpytest("examples/project_hooks", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*_ test_shell_route_to_secrets_is_blocked_too _*",
        '>       assert not (agent_session.workspace / "secrets").exists()',
        "E       AssertionError: assert not True",
        "E        +  where True = exists()",
        "examples/project_hooks/test_project_hooks.py:19: AssertionError",
        "*test_project_hooks.py::test_shell_route_to_secrets_is_blocked_too: 2 turn(s), *, mode script",
    ])
    assert "ReplayMiss" not in result.stdout.str()


def test_cache_investigation_catches_a_tool_that_stops_redacting(pytester):
    example = copy_example(pytester, "cache_investigation")
    pytester.runpytest("examples/cache_investigation", "-p", "no:cacheprovider").assert_outcomes(passed=7)
    answer_from_scripts(pytester, example / "model_script.py")
    pytester.runpytest("examples/cache_investigation", "-p", "no:cacheprovider").assert_outcomes(passed=7)

    patch(example / "cache_agent.py", "return redact(content) if", "return content if")
    result = pytester.runpytest("examples/cache_investigation", "-p", "no:cacheprovider", "-vv")
    result.assert_outcomes(passed=6, failed=1)
    # -vv: the assertion shows the whole of what the model was sent, the token in the tool's answer.
    result.stdout.fnmatch_lines([
        "*_ test_the_config_token_never_reaches_the_model _*",
        '>       assert "api_token = <redacted>" in sent',
        "E       assert 'api_token = <redacted>' in '*\"type\": \"tool_result\", \"tool_use_id\": \"toolu_*\", "
        "\"content\": \"*ttl = 30*api_token = cp-canary-5f0c2b7e*\"}]}]*",
        "examples/cache_investigation/test_cache_investigation.py:91: AssertionError",
    ])
    assert "ReplayMiss" not in result.stdout.str()


@pytest.mark.slow
def test_redaction_catches_a_base64_copy_once_the_shell_guard_is_gone(pytester):
    """Its model is scripted by the example itself (no cassette), so the broken guard's run reaches the canary."""
    example = REPO / "examples" / "redaction"
    shutil.copytree(example, pytester.path / "redaction", ignore=shutil.ignore_patterns("__pycache__"))
    pytester.runpytest("redaction", "-p", "no:cacheprovider").assert_outcomes(passed=2)

    plane = pytester.path / "redaction" / "control_plane.py"
    patch(plane, 'SHELL_GUARDED = "Bash"', 'SHELL_GUARDED = "NoSuchTool"')
    result = pytester.runpytest("redaction", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)  # the pattern redaction still catches printenv's NAME=value
    result.stdout.fnmatch_lines([
        "*_ test_the_api_key_never_reaches_the_model _*",
        "*CanaryLeaked: Canary canary_secret leaked to 5 place(s):",
        "*request #3, messages?5?.content?0?.content: canary_secret canary, base64 — *QVBJX0tFWT1j«canary_secret "
        "canary»ClJFR0lPTj1l«secret, id *, base64»*",  # REGION is a value of .env too: masked
        "*SDK message #5 (UserMessage), content?0?.content: canary_secret canary, base64*",
    ])
    result.stdout.fnmatch_lines(["*transcript $CLAUDE_CONFIG_DIR/projects/*.jsonl, line *: canary_secret canary, "
                                 "base64*"])
    assert "ReplayMiss" not in result.stdout.str()
    assert "cp-canary-" not in "\n".join(line for line in result.stdout.lines if line.startswith("E "))


SECRETS_OF_THE_EXAMPLE = ("hunter2-example-only", "sk-live-0000-example-not-a-real-key", "deploy-token-example-0000")


@pytest.mark.slow
def test_settings_hooks_catches_a_broken_hook_and_never_shows_the_secrets(pytester):
    example = copy_example(pytester, "settings_hooks")
    pytester.runpytest("examples/settings_hooks", "-p", "no:cacheprovider").assert_outcomes(passed=6)
    answer_from_scripts(pytester, example / "model_script.py")
    pytester.runpytest("examples/settings_hooks", "-p", "no:cacheprovider").assert_outcomes(passed=6)

    # The jq hook forgets the Read tool: reading the deploy token gets through, and the test says so.
    patch(example / "project" / ".claude" / "settings.json", '"matcher": "Read|Write|Edit|Bash"',
          '"matcher": "Write|Edit|Bash"')
    result = pytester.runpytest("examples/settings_hooks", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["*test_the_jq_hook_denies_the_read_tool_the_deploy_token*",
                                 "E       AssertionError: assert ('allowed' == 'denied_by_hook'*"])

    # An audit slice with holes that carry .env to the model, its report, JSON and module: no value shows anywhere.
    audit = pytester.runpytest(
        "--agent-audit", "examples/settings_hooks/project", "-o", "agent_audit_modes=acceptEdits",
        "-k", "read-.env and (bash-base64 or bash-cat or read:relative)", "--agent-audit-out", "report",
        "--agent-audit-json", "audit.json", "--agent-audit-write", "test_written.py")
    assert "✗" in audit.stdout.str() and (pytester.path / "report" / "audit.html").is_file()
    texts = {"terminal": audit.stdout.str() + audit.stderr.str() + result.stdout.str()}
    for path in [*(pytester.path / "report").rglob("*.html"), pytester.path / "audit.json",
                 pytester.path / "test_written.py"]:
        texts[path.name] = path.read_text()
    assert len(texts) > 4, texts.keys()  # the page, the JSON, the module, a report per hole
    shown = [(name, secret) for name, text in texts.items() for secret in SECRETS_OF_THE_EXAMPLE if secret in text]
    assert shown == []
    assert any("«secret, id " in text for name, text in texts.items() if name.endswith(".html"))  # masked, not dropped


def test_no_two_test_modules_share_a_name():
    """`make test` collects tests/ with an example's folder (rootdir-relative imports, no packages): two test modules
    of one name there fail the whole run at collection ("import file mismatch"), as CI once did."""
    seen: dict[str, Path] = {}
    clashes = []
    for module in sorted([*REPO.glob("tests/test_*.py"), *REPO.glob("examples/*/test_*.py")]):
        if module.name in seen:
            clashes.append(f"{seen[module.name].relative_to(REPO)} and {module.relative_to(REPO)}")
        seen.setdefault(module.name, module)
    assert not clashes, "rename one of each: " + "; ".join(clashes)
