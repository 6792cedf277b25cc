"""A cassette replayed on another Claude Code CLI release than it was recorded on.

Chosen on purpose (`--agent-cli`, `$CONTROLPLANE_CLI`, the ini option), the CLI's requests are matched by their
conversation — the prompts, the model's turns and the tool results, in order — not by the system prompt and tool
descriptions each release writes of its own, and the summary says the replay crossed releases.  The default CLI of
another release fails with every way out.  A conversation that really differs misses, naming both releases.

The cassettes are copies of examples/claude_guard's with the release they say they were recorded on changed: the
bundled CLI then plays a release "other" than the recording's without a second CLI.  One test replays them on a real
older release, when the cache holds it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_controlplane.cassette.matching import across_key, conversation, match_key
from pytest_controlplane.clis import cache
from pytest_controlplane.clis.choice import bundled, version_of

REPO = Path(__file__).parent.parent
EXAMPLE = "examples/claude_guard"
TESTS = f"{EXAMPLE}/test_guard.py"
CASSETTES = Path("cassettes") / EXAMPLE / "test_guard"
RECORDED = "2.1.332"  # the release the example's cassettes were recorded on
OTHER = "2.1.300"  # the release the copies say they were recorded on
RUNNING = version_of(bundled())


def guard_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, recorded_on: str = OTHER) -> Path:
    """examples/claude_guard and its cassettes, which now say they were recorded on `recorded_on`; no CLI chosen."""
    monkeypatch.delenv("CONTROLPLANE_CLI", raising=False)
    pytester.makeini("[pytest]\n")  # rootdir = pytester.path, so cassettes resolve as in the repo
    shutil.copytree(REPO / EXAMPLE, pytester.path / EXAMPLE, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / CASSETTES, pytester.path / CASSETTES)
    for cassette in (pytester.path / CASSETTES).iterdir():
        text = cassette.read_text()
        assert f"claude_cli_version: {RECORDED}" in text
        cassette.write_text(text.replace(f"claude_cli_version: {RECORDED}", f"claude_cli_version: {recorded_on}"))
    return pytester.path


def cassettes(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / CASSETTES).iterdir())}


# --- through the plugin ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("chosen_by", ["--agent-cli", "$CONTROLPLANE_CLI", "ini option agent_cli"])
def test_a_cli_chosen_on_purpose_replays_a_cassette_of_another_release_and_says_so(pytester, monkeypatch, chosen_by):
    root = guard_project(pytester, monkeypatch)
    before = cassettes(root)
    args = ["-p", "no:cacheprovider", "-v", "-k", "ordinary_note"]
    if chosen_by == "--agent-cli":
        args += ["--agent-cli", "bundled"]
    elif chosen_by == "$CONTROLPLANE_CLI":
        monkeypatch.setenv("CONTROLPLANE_CLI", "bundled")
    else:
        pytester.makeini("[pytest]\nagent_cli = bundled\n")
    result = pytester.runpytest(TESTS, *args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        f"claude cli: Claude Code {RUNNING} (bundled) *, chosen by {chosen_by}",
        f"*test_guard.py::test_ordinary_note_is_written: 2 turn(s), *, cassette 2 hit(s), 2 replayed across CLI "
        f"releases (recorded on {OTHER}, running {RUNNING}) / 0 miss(es) / 0 unused, recorded 0, mode replay",
        f"total: 1 agent test(s), *, cassette 2 hit(s), 2 replayed across CLI releases (recorded on {OTHER}, running "
        f"{RUNNING}) / 0 miss(es) / 0 unused, recorded 0",
    ])  # fmt: skip
    assert "CassetteVersionMismatch" not in result.stdout.str()
    assert cassettes(root) == before  # replay never writes


@pytest.mark.slow
def test_the_default_cli_of_another_release_fails_naming_every_way_out(pytester, monkeypatch):
    root = guard_project(pytester, monkeypatch)
    before = cassettes(root)
    result = pytester.runpytest(TESTS, "-p", "no:cacheprovider", "-k", "ordinary_note")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*CassetteVersionMismatch: Cassette *test_ordinary_note_is_written.yaml was recorded with Claude Code CLI "
        f"{OTHER}, but this run uses CLI {RUNNING}; its prompts differ, so its requests cannot match.",
        f"*Re-record it: pytest --agent-mode=record --agent-script {EXAMPLE}/model_script.py:MODEL "
        f"'{TESTS}::test_ordinary_note_is_written' — or, to replay it as it is, pin claude-agent-sdk==0.2.167 (pip "
        f"install 'claude-agent-sdk==0.2.167': it bundles CLI {OTHER}), or run that CLI: --agent-cli {OTHER} "
        f"(controlplane cli install {OTHER}).",
        f"*Or replay its recorded answers on CLI {RUNNING}, matched by conversation: --agent-cli {RUNNING} (or "
        "bundled: the same CLI, nothing to install).",
    ])  # fmt: skip
    assert "replayed across" not in result.stdout.str()
    assert cassettes(root) == before


@pytest.mark.slow
@pytest.mark.parametrize(
    ("changed", "old", "new", "request_number", "diff"),
    [
        ("test_guard.py", "Store my api key in the project.", "Store my api key in the repository.", 1,
         ['*-    "text": "Store my api key in the project.",', '*+    "text": "Store my api key in the repository.",']),
        ("guard.py", 'deny(f"guard: {path} is protected")', 'deny(f"guard: {path} is off limits")', 2,
         ['*-      "text": "PreToolUse:Write hook error: guard: {{workspace}}/.env is protected",',
          '*+      "text": "PreToolUse:Write hook error: guard: {{workspace}}/.env is off limits",']),
    ],
    ids=["another prompt", "another tool result"],
)  # fmt: skip
def test_a_conversation_that_differs_misses_across_releases_naming_both(
    pytester, monkeypatch, changed, old, new, request_number, diff
):
    root = guard_project(pytester, monkeypatch)
    before = cassettes(root)
    source = root / EXAMPLE / changed
    assert old in source.read_text()
    source.write_text(source.read_text().replace(old, new))
    result = pytester.runpytest(TESTS, "-p", "no:cacheprovider", "--agent-cli", "bundled", "-k", "dotenv_write")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*ReplayMiss: Request #{request_number} (POST /v1/messages?beta=true) matches no unplayed interaction of "
        f"cassette *test_dotenv_write_is_denied_by_the_hook.yaml (2 recorded, {request_number - 1} played; replayed "
        f"across CLI releases: recorded on {OTHER}, running {RUNNING}); closest recorded request: interaction #*.",
        "*Diff (recorded -> sent now, the conversation):",
        *diff,
    ])  # fmt: skip
    result.stdout.fnmatch_lines([
        f"*Replayed across CLI releases (recorded on {OTHER}, running {RUNNING}, chosen by --agent-cli): the "
        f"conversation itself differs. Re-record it on {RUNNING}, chosen the same way: pytest --agent-mode=record "
        f"--agent-script {EXAMPLE}/model_script.py:MODEL '{TESTS}::test_dotenv_write_is_denied_by_the_hook' — or run "
        f"the release it was recorded on: --agent-cli {OTHER}.",
    ])  # fmt: skip
    output = result.stdout.str()
    assert "system-reminder" not in output and "x-anthropic-billing-header" not in output  # the CLI's own text
    assert cassettes(root) == before


@pytest.mark.slow
def test_the_examples_cassettes_replay_on_a_real_older_release(pytester, monkeypatch):
    """The cassettes of 2.1.332 on the real 2.1.300, whose system prompt, tools (23, not 13) and own messages differ."""
    if cache.installed(OTHER) is None:
        pytest.skip(f"Claude Code {OTHER} is not in the CLI cache ({cache.root()}): `controlplane cli install {OTHER}`")
    root = guard_project(pytester, monkeypatch, recorded_on=RECORDED)
    before = cassettes(root)
    result = pytester.runpytest(TESTS, "-p", "no:cacheprovider", "--agent-cli", OTHER)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([
        f"total: 3 agent test(s), *, cassette 6 hit(s), 6 replayed across CLI releases (recorded on {RECORDED}, "
        f"running {OTHER}) / 0 miss(es) / 0 unused, recorded 0",
    ])  # fmt: skip
    assert cassettes(root) == before


# --- the cross-release key ---------------------------------------------------------------------------------------

REMINDER = "<system-reminder>\nAttribution for git commits: none.\n</system-reminder>\n"
TOOL = {"name": "Write", "description": "Writes a file.", "input_schema": {"type": "object"}}


def body(
    *,
    system: str = "You are a Claude agent. cc_version=2.1.332",
    tools: list[dict[str, object]] | None = None,
    reminder: str = REMINDER,
    environment: str = "# Environment\n - Platform: linux",
    result: str = "File created successfully at: /w/notes.md",
    prompt: str = "Write today's note.",
    model: str = "claude-opus-5-5",
    **extra: object,
) -> bytes:
    """A main-loop request of the CLI after one tool call, as it sends it."""
    messages = [
        {"role": "user", "content": [{"type": "text", "text": reminder}, {"type": "text", "text": prompt}]},
        {"role": "system", "content": [{"type": "text", "text": environment}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "a note", "signature": "c2ln"},
            {"type": "tool_use", "id": "toolu_01", "name": "Write", "input": {"file_path": "notes.md", "content": "x"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": result}]},
    ]  # fmt: skip
    value = {
        "model": model,
        "system": [{"type": "text", "text": system}],
        "tools": [TOOL] if tools is None else tools,
        "messages": messages,
        "max_tokens": 32000,
        "metadata": {"user_id": "device-1"},
        "stream": True,
        **extra,
    }
    return json.dumps(value).encode()


def key(data: bytes) -> str:
    return across_key("POST", "/v1/messages", data)


def test_the_cross_release_key_ignores_what_a_release_writes_of_its_own():
    recorded = body()
    other_release = body(
        system="You are a Claude agent, newer. cc_version=2.1.337",
        tools=[TOOL, {"name": "Monitor", "description": "Watches.", "input_schema": {"type": "object"}}],
        reminder="<system-reminder>\nSomething else the new release reminds of.\n</system-reminder>",
        environment="# Environment\n - Platform: linux\n - In `curl`, send untrusted values with --form-string.",
        model="claude-opus-5-6",
        max_tokens=64000,
        thinking={"type": "adaptive"},
    )
    assert match_key("POST", "/v1/messages", recorded) != match_key("POST", "/v1/messages", other_release)
    assert key(recorded) == key(other_release)
    # a release that sends the prompt as a string, the tool result as text blocks (a cache mark in them), or one
    # more message of its own
    moved = json.loads(other_release)
    moved["messages"][0]["content"] = "Write today's note."
    moved["messages"][3]["content"][0]["content"] = [
        {"type": "text", "text": "File created successfully at: /w/notes.md"}
    ]
    moved["messages"][3]["content"][0]["content"][0]["cache_control"] = {"type": "ephemeral"}
    moved["messages"].append({"role": "system", "content": "<total_tokens>149 tokens left</total_tokens>"})
    assert key(recorded) == key(json.dumps(moved).encode())


def test_the_cross_release_key_tells_conversations_apart():
    recorded = key(body())
    assert key(body(result="PreToolUse:Write hook error: guard: notes.md is protected")) != recorded
    assert key(body(prompt="Write yesterday's note.")) != recorded
    assert key(body(tools=[])) != recorded  # a side request of the CLI offers no tools: never a main-loop turn
    assert key(body(stream=False)) != recorded
    error = json.loads(body())
    error["messages"][3]["content"][0]["is_error"] = True
    assert key(json.dumps(error).encode()) != recorded
    two = json.loads(body())
    two["messages"][0]["content"].append({"type": "text", "text": "Then read it."})
    swapped = json.loads(json.dumps(two))
    swapped["messages"][0]["content"][1:] = swapped["messages"][0]["content"][:0:-1]  # the same prompts, reordered
    assert key(json.dumps(two).encode()) != key(json.dumps(swapped).encode())
    assert across_key("POST", "/v1/messages/count_tokens", body()) != recorded


def test_the_conversation_is_what_a_cross_release_miss_shows():
    seen = conversation(body())
    assert seen == {
        "stream": True,
        "tools": True,
        "conversation": [
            ["user", {"type": "text", "text": "Write today's note."}],
            ["assistant", {"type": "tool_use", "id": "toolu_01", "name": "Write",
                           "input": {"file_path": "notes.md", "content": "x"}}],
            ["user", {"type": "tool_result", "tool_use_id": "toolu_01",
                      "content": [{"type": "text", "text": "File created successfully at: /w/notes.md"}]}],
        ],
    }  # fmt: skip
