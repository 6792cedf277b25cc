"""Every problem kind the history checker reports fires on a real history damaged in one place, and stays quiet on
a healthy history of the same shape.

The transcripts are the real ones in data/transcripts (Claude Code CLIs 1.0.128, 2.0.77, 2.1.114, each driven by
the scripted model); the message lists are the API messages a CLI would send, rebuilt from those transcripts.  Each
damage is what a crash, a careless resume or a trimming step does: a torn line, a line dropped or written twice, a
tool call answered twice, a role renamed.  The last part drives the checker the way users meet it: an agent whose
session file a crash tears (`assert_consistent()` names the corrupt line), and resumes that lose entries (a crash
report names each lost one).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_controlplane import ConfigError, check_history
from pytest_controlplane.history.check import lost_entries

DATA = Path(__file__).parent / "data" / "transcripts"
VERSIONS = ["1.0.128", "2.0.77", "2.1.114"]
CHECK_PY = Path(__file__).parent.parent / "src" / "pytest_controlplane" / "history" / "check.py"


def _lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def _basic(version: str) -> list[str]:
    """Write, Bash, Read + Bash in parallel, a text answer; then a resume (one tool call, a text answer)."""
    return _lines(f"claude-code-{version}-basic.jsonl")


def _entry(line: str) -> dict[str, Any]:
    return json.loads(line)


def _blocks(entry: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = (entry.get("message") or {}).get("content")
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind] if isinstance(content, list) else []


def _index(lines: list[str], matches: Any, *, last: bool = False) -> int:
    """The 0-based index of the first (or last) line whose entry `matches`."""
    found = [i for i, line in enumerate(lines) if line.strip() and matches(_entry(line))]
    assert found, "the real transcript no longer has the shape this test damages"
    return found[-1] if last else found[0]


def _is_tool_use(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "assistant" and bool(_blocks(entry, "tool_use"))


def _is_tool_result(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "user" and bool(_blocks(entry, "tool_result"))


def _is_prompt(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "user" and isinstance((entry.get("message") or {}).get("content"), str)


def _check(tmp_path: Path, lines: list[str], *, end: str = "\n", newline: str = "\n") -> list[Any]:
    """check_history on `lines` written as a transcript file, the way a user calls it (with the file's path)."""
    path = tmp_path / "session.jsonl"
    path.write_bytes((newline.join(lines) + end).encode("utf-8"))
    return check_history(path)


def _found(problems: list[Any]) -> list[tuple[str, int | None, str]]:
    return [(p.kind, p.line, p.severity) for p in problems]


# --- corrupt-line -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_torn_last_line_is_a_corrupt_line(tmp_path, version):
    """What a crash in the middle of a write leaves: the last line cut in half is named, with its start."""
    lines = _basic(version)
    torn = lines[-1][:len(lines[-1]) // 2]
    lines[-1] = torn
    [problem] = _check(tmp_path, lines)
    assert (problem.kind, problem.line, problem.severity) == ("corrupt-line", len(lines), "error")
    assert problem.message == f"not JSON: {torn[:60]!r}"
    assert str(problem) == f"line {len(lines)}: corrupt-line: not JSON: {torn[:60]!r}"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_torn_line_in_the_middle_is_named_besides_what_it_breaks(tmp_path, version):
    """A torn tool_result line: the corrupt line is reported at its place, not only its tool_use left unanswered."""
    lines = _basic(version)
    result = _index(lines, _is_tool_result)
    lines[result] = lines[result][:-10]
    problems = _check(tmp_path, lines)
    assert ("corrupt-line", result + 1, "error") in _found(problems)
    assert "unanswered-tool-use" in [p.kind for p in problems]


@pytest.mark.parametrize("version", VERSIONS)
def test_blank_lines_crlf_and_no_final_newline_are_not_corrupt(tmp_path, version):
    """Whitespace between entries, Windows line ends, a file without its last newline: whole lines, no problem."""
    lines = _basic(version)
    spaced = [part for line in lines for part in (line, "", "   ")]
    assert _check(tmp_path, spaced, end="", newline="\r\n") == []


@pytest.mark.parametrize("version", VERSIONS)
def test_problems_after_a_blank_line_or_a_line_without_uuid_are_still_found_and_come_in_line_order(tmp_path, version):
    """Reading goes on past what it skips: a blank line and a bookkeeping line (no uuid) early on, then a duplicated
    entry, then a torn last line.  Problems are listed by line, whatever their kind (corrupt-line sorts first by
    name, yet comes last here)."""
    name, kind = BOOKKEEPING[version]
    bookkeeping = _lines(name)[_index(_lines(name), lambda e: e.get("type") == kind)]
    lines = _basic(version)
    use = _index(lines, _is_tool_use)
    lines.insert(use + 1, lines[use])  # duplicate-uuid at line use + 2
    lines[1:1] = ["", bookkeeping]  # everything after the first line moves down by 2
    lines.append('{"type": "user", "mess')
    assert _found(_check(tmp_path, lines)) == [("duplicate-uuid", use + 4, "error"),
                                               ("corrupt-line", len(lines), "error")]


# --- duplicate-uuid -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_an_entry_written_twice_is_a_duplicate_uuid(tmp_path, version):
    """A tool_use line written twice (a retried append): one problem, at the copy, naming the first line."""
    lines = _basic(version)
    use = _index(lines, _is_tool_use)
    lines.insert(use + 1, lines[use])
    assert _found(problems := _check(tmp_path, lines)) == [("duplicate-uuid", use + 2, "error")]
    assert problems[0].message == f"uuid {_entry(lines[use])['uuid']} was already written at line {use + 1}"


BOOKKEEPING = {"1.0.128": ("claude-code-1.0.128-basic-summaries.jsonl", "summary"),
               "2.0.77": ("claude-code-2.0.77-basic.jsonl", "queue-operation"),
               "2.1.114": ("claude-code-2.1.114-basic.jsonl", "last-prompt")}


@pytest.mark.parametrize("version", VERSIONS)
def test_a_bookkeeping_line_written_twice_is_no_duplicate(tmp_path, version):
    """Lines without a uuid (1.0's summary, 2.0's queue-operation, 2.1's last-prompt) repeat in real files."""
    name, kind = BOOKKEEPING[version]
    bookkeeping = _lines(name)[_index(_lines(name), lambda e: e.get("type") == kind)]
    assert "uuid" not in _entry(bookkeeping)
    lines = _basic(version)
    lines[3:3] = [bookkeeping, bookkeeping]
    lines += [bookkeeping, bookkeeping]
    assert _check(tmp_path, lines) == []


# --- broken-parent ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_dropped_line_leaves_its_child_a_broken_parent(tmp_path, version):
    """The resume's prompt is lost: the assistant line under it names a parent no line has."""
    lines = _basic(version)
    prompt = _index(lines, _is_prompt, last=True)
    uuid = _entry(lines.pop(prompt))["uuid"]
    child = prompt  # the prompt's answer moved up into its place
    assert _entry(lines[child])["parentUuid"] == uuid
    [problem] = _check(tmp_path, lines)
    assert (problem.kind, problem.line, problem.severity) == ("broken-parent", child + 1, "error")
    assert problem.message == f"parentUuid {uuid} is not in the transcript (a line was dropped, or never written)"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_transcript_cut_before_the_resume_has_no_broken_parent(tmp_path, version):
    """The same file up to the resume's prompt (the first run alone): every parent is there."""
    lines = _basic(version)
    assert _check(tmp_path, lines[:_index(lines, _is_prompt, last=True)]) == []


SIDECHAINS = {"1.0.128": "claude-code-1.0.128-subagent.jsonl",  # 1.0 writes subagents into the main file
              "2.0.77": "claude-code-2.0.77-subagent-subagent-1.jsonl",
              "2.1.114": "claude-code-2.1.114-subagent-subagent-1.jsonl"}


@pytest.mark.parametrize("version", VERSIONS)
def test_a_line_dropped_from_a_subagent_sidechain_is_only_a_warning(tmp_path, version):
    """Resume does not follow sidechains: a broken parent there is a warning, named as the sidechain's.  (The
    subagent's prompt is dropped: its other lines are tool calls and results, whose loss is an error anywhere.)"""
    lines = _lines(SIDECHAINS[version])
    dropped = _index(lines, lambda e: e.get("isSidechain") and _is_prompt(e))
    uuid = _entry(lines.pop(dropped))["uuid"]
    problems = _check(tmp_path, lines)
    assert [(p.kind, p.severity) for p in problems] == [("broken-parent", "warning")]
    assert problems[0].message == (f"parentUuid {uuid} is not in this sidechain (CLI 2.0.x leaves a subagent's "
                                   "unsaved hook messages out; resume does not follow sidechains)")


# --- reordered ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_an_entry_written_before_its_parent_is_reordered(tmp_path, version):
    """The resume's prompt and its answer swapped: a warning (resume follows parentUuid), with both lines."""
    lines = _basic(version)
    prompt = _index(lines, _is_prompt, last=True)
    lines[prompt], lines[prompt + 1] = lines[prompt + 1], lines[prompt]
    [problem] = _check(tmp_path, lines)
    assert (problem.kind, problem.line, problem.severity) == ("reordered", prompt + 1, "warning")
    assert problem.message == (f"its parent {_entry(lines[prompt + 1])['uuid']} comes later, at line {prompt + 2} "
                               "(resume follows parentUuid, so this alone loses nothing)")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_result_written_before_its_tool_use_is_reordered(tmp_path, version):
    """The resume's tool_use and its result swapped: warnings only, one naming the tool_use's line."""
    lines = _basic(version)
    use = _index(lines, _is_tool_use, last=True)
    assert _is_tool_result(_entry(lines[use + 1]))
    lines[use], lines[use + 1] = lines[use + 1], lines[use]
    problems = _check(tmp_path, lines)
    assert {(p.kind, p.severity) for p in problems} == {("reordered", "warning")}
    use_id = _blocks(_entry(lines[use + 1]), "tool_use")[0]["id"]
    assert (use + 1, f"tool_result for {use_id} comes before its tool_use (line {use + 2})") in \
        [(p.line, p.message) for p in problems]


@pytest.mark.parametrize("version", VERSIONS)
def test_parallel_tool_results_hanging_from_either_tool_use_are_in_order(tmp_path, version):
    """Two tool calls of one message, their results on lines of their own after both: what every CLI writes."""
    lines = _basic(version)
    ids = [e["message"]["id"] for e in map(_entry, lines) if _is_tool_use(e)]
    assert any(ids.count(i) == 2 for i in ids), "no parallel tool calls in this transcript"
    assert _check(tmp_path, lines) == []


# --- second-root --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_compaction_that_lost_its_logical_parent_is_a_second_root(tmp_path, version):
    """A compact boundary (parentUuid null) without the link back to the conversation it continues."""
    lines = _lines(f"claude-code-{version}-compact.jsonl")
    boundary = _index(lines, lambda e: e.get("subtype") == "compact_boundary")
    entry = _entry(lines[boundary])
    del entry["logicalParentUuid"]
    lines[boundary] = json.dumps(entry)
    first = _index(lines, lambda e: e.get("uuid") and e.get("parentUuid") is None)
    [problem] = _check(tmp_path, lines)
    assert (problem.kind, problem.line, problem.severity) == ("second-root", boundary + 1, "error")
    assert problem.message.startswith(f"a second entry without parent (the first is at line {first + 1})")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_compaction_whose_logical_parent_is_not_in_the_file_is_a_second_root(tmp_path, version):
    """The link back names an entry no line has: the boundary starts a second conversation all the same."""
    lines = _lines(f"claude-code-{version}-compact.jsonl")
    boundary = _index(lines, lambda e: e.get("subtype") == "compact_boundary")
    entry = _entry(lines[boundary])
    entry["logicalParentUuid"] = "00000000-0000-4000-8000-000000000000"
    lines[boundary] = json.dumps(entry)
    assert _found(_check(tmp_path, lines)) == [("second-root", boundary + 1, "error")]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_compaction_boundary_that_names_its_logical_parent_is_no_second_root(tmp_path, version):
    """The same boundary as the CLI wrote it: parentUuid null, logicalParentUuid the line before it."""
    lines = _lines(f"claude-code-{version}-compact.jsonl")
    roots = [e for e in map(_entry, lines) if e.get("uuid") and e.get("parentUuid") is None]
    assert len(roots) == 2 and roots[1]["logicalParentUuid"]
    assert _check(tmp_path, lines) == []


def test_subagent_roots_in_the_main_file_are_no_second_root(tmp_path):
    """CLI 1.0 writes each subagent's lines into the main file, each sidechain with a root of its own."""
    lines = _lines("claude-code-1.0.128-subagent.jsonl")
    roots = [e for e in map(_entry, lines) if e.get("uuid") and e.get("parentUuid") is None]
    assert len([e for e in roots if e.get("isSidechain")]) == 2 and len(roots) == 3
    assert _check(tmp_path, lines) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_a_resume_that_starts_a_new_root_is_a_second_root(tmp_path, version):
    """The resume's prompt written without its parent: resume would see two conversations."""
    lines = _basic(version)
    prompt = _index(lines, _is_prompt, last=True)
    lines[prompt] = json.dumps({**_entry(lines[prompt]), "parentUuid": None})
    assert _found(_check(tmp_path, lines)) == [("second-root", prompt + 1, "error")]


# --- unanswered-tool-use ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_run_killed_inside_a_tool_leaves_an_unanswered_tool_use(tmp_path, version):
    """The file as a kill inside the resume's tool leaves it: the tool_use is its last entry."""
    lines = _basic(version)
    use = _index(lines, _is_tool_use, last=True)
    use_id = _blocks(_entry(lines[use]), "tool_use")[0]["id"]
    [problem] = _check(tmp_path, lines[:use + 1])
    assert (problem.kind, problem.line, problem.severity) == ("unanswered-tool-use", use + 1, "error")
    assert problem.message == f"tool_use {use_id} has no tool_result (the run stopped inside the tool or its hooks)"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_run_killed_after_the_tool_result_has_no_unanswered_tool_use(tmp_path, version):
    """Killed one line later, after the result was written: nothing is missing."""
    lines = _basic(version)
    use = _index(lines, _is_tool_use, last=True)
    assert _is_tool_result(_entry(lines[use + 1]))
    assert _check(tmp_path, lines[:use + 2]) == []


# --- orphan-tool-result -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_result_whose_tool_use_is_gone_is_an_orphan(tmp_path, version):
    """The assistant line is kept (its uuid, its place) but its tool_use block is lost."""
    lines = _basic(version)
    use = _index(lines, _is_tool_use, last=True)
    entry = _entry(lines[use])
    use_id = _blocks(entry, "tool_use")[0]["id"]
    entry["message"]["content"] = [{"type": "text", "text": "I will run it."}]
    lines[use] = json.dumps(entry)
    result = _index(lines, lambda e: any(b["tool_use_id"] == use_id for b in _blocks(e, "tool_result")))
    [problem] = _check(tmp_path, lines)
    assert (problem.kind, problem.line, problem.severity) == ("orphan-tool-result", result + 1, "error")
    assert problem.message == f"tool_result for {use_id}, a tool_use that is not in the transcript"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_result_several_lines_below_its_tool_use_is_no_orphan(tmp_path, version):
    """Parallel calls: the first result comes two lines after its tool_use, under the other call's line."""
    lines = _basic(version)
    distances = []
    for number, entry in enumerate(map(_entry, lines)):
        for block in _blocks(entry, "tool_result"):
            use = _index(lines, lambda e, i=block["tool_use_id"]: i in [b["id"] for b in _blocks(e, "tool_use")])
            distances.append(number - use)
    assert max(distances) >= 2
    assert _check(tmp_path, lines) == []


# --- duplicate-tool-result ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_use_answered_twice_is_a_duplicate_tool_result(tmp_path, version):
    """A second result line for the resume's tool call: named at the second answer, pointing at the first."""
    lines = _basic(version)
    result = _index(lines, _is_tool_result, last=True)
    entry = _entry(lines[result])
    use_id = _blocks(entry, "tool_result")[0]["tool_use_id"]
    # What a resume that answers an interrupted tool again writes: a line of its own, under the first answer.
    lines.insert(result + 1, json.dumps({**entry, "uuid": "4d2e9c55-0000-4000-8000-aa1e0c7d9b10",
                                         "parentUuid": entry["uuid"]}))
    [problem] = _check(tmp_path, lines)
    assert (problem.kind, problem.line, problem.severity) == ("duplicate-tool-result", result + 2, "error")
    assert problem.message == f"tool_use {use_id} answered again (first at line {result + 1})"


@pytest.mark.parametrize("version", VERSIONS)
def test_parallel_tool_uses_answered_once_each_on_two_lines_are_no_duplicate_result(tmp_path, version):
    """Two result lines in a row after one assistant message, one per tool_use: not one tool_use answered twice."""
    lines = _basic(version)
    results = [i for i, entry in enumerate(map(_entry, lines)) if _is_tool_result(entry)]
    second = next(i for i in results if i - 1 in results)
    answered = [_blocks(_entry(lines[i]), "tool_result")[0]["tool_use_id"] for i in (second - 1, second)]
    assert answered[0] != answered[1]
    assert _check(tmp_path, lines) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_one_line_answering_a_tool_use_twice_is_a_duplicate_tool_result(tmp_path, version):
    """The transcript twin of the message-list case: the resume's result line holds its tool_result twice."""
    lines = _basic(version)
    result = _index(lines, _is_tool_result, last=True)
    entry = _entry(lines[result])
    entry["message"]["content"] = entry["message"]["content"] * 2
    lines[result] = json.dumps(entry)
    assert _found(_check(tmp_path, lines)) == [("duplicate-tool-result", result + 1, "error")]


# --- duplicate-tool-use -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_use_written_again_under_a_new_uuid_is_a_duplicate_tool_use(tmp_path, version):
    """A resume that replays the last assistant message as a new line: the same tool_use id twice."""
    lines = _basic(version)
    use = _index(lines, _is_tool_use, last=True)
    entry = _entry(lines[use])
    lines.insert(use + 1, json.dumps({**entry, "uuid": "9c55aa1e-0000-4000-8000-0c7d9b104d2e",
                                      "parentUuid": entry["uuid"]}))
    use_id = _blocks(entry, "tool_use")[0]["id"]
    [problem] = _check(tmp_path, lines)
    assert (problem.kind, problem.line, problem.severity) == ("duplicate-tool-use", use + 2, "error")
    assert problem.message == f"tool_use {use_id} also at line {use + 1}"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_use_line_duplicated_verbatim_is_only_a_duplicate_uuid(tmp_path, version):
    """The same line twice is one problem (its uuid), not also a second tool_use."""
    lines = _basic(version)
    use = _index(lines, _is_tool_use, last=True)
    lines.insert(use + 1, lines[use])
    assert [p.kind for p in _check(tmp_path, lines)] == ["duplicate-uuid"]


@pytest.mark.parametrize("version", VERSIONS)
def test_parallel_tool_uses_of_one_message_on_two_lines_are_no_duplicate_tool_use(tmp_path, version):
    """The CLI writes one line per tool_use block, all with the message's id; their tool_use ids differ."""
    lines = _basic(version)
    by_message: dict[str, list[str]] = {}
    for entry in map(_entry, lines):
        if _is_tool_use(entry):
            by_message.setdefault(entry["message"]["id"], []).extend(b["id"] for b in _blocks(entry, "tool_use"))
    assert any(len(ids) == 2 == len(set(ids)) for ids in by_message.values())
    assert _check(tmp_path, lines) == []


# --- lost-entry (a transcript before a crash, and after the resume) -------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_real_resume_loses_no_entry(version):
    """Before: the file as the first run left it; after: the same file once the CLI resumed it."""
    after = _basic(version)
    before = after[:_index(after, _is_prompt, last=True)]
    assert lost_entries(before, after) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_an_entry_after_a_torn_line_is_still_counted_before_the_crash(version):
    """The file before the crash has a torn line in the middle: the entries after it still count."""
    before = _basic(version)
    use = _index(before, _is_tool_use, last=True)
    after = before[:use] + before[use + 1:]
    before.insert(1, before[1][:20])
    [problem] = lost_entries(before, after)
    assert (problem.kind, problem.line) == ("lost-entry", use + 2)


@pytest.mark.parametrize("version", VERSIONS)
def test_an_entry_the_resume_dropped_is_a_lost_entry(version):
    """After the resume the first tool_use line is gone: named by its uuid at its line before the crash."""
    before = _basic(version)
    use = _index(before, _is_tool_use)
    after = before[:use] + before[use + 1:]
    [problem] = lost_entries(before, after)
    assert (problem.kind, problem.line, problem.severity) == ("lost-entry", use + 1, "error")
    assert problem.message == (f"entry {_entry(before[use])['uuid']} existed before the crash and is gone after "
                               "the resume")


# --- message lists: the API messages a CLI sends, rebuilt from its transcript --------------------------------------


def _api_messages(version: str) -> list[dict[str, Any]]:
    """The user and assistant lines in file order; an assistant message's lines (one per block, one message id)
    merged, and consecutive tool_result lines merged into one user message, as the CLI sends them."""
    messages: list[dict[str, Any]] = []
    last_id = None
    for entry in map(_entry, _basic(version)):
        if entry.get("type") not in ("user", "assistant"):
            continue
        message = copy.deepcopy(entry["message"])
        content = message["content"]
        previous = messages[-1] if messages else None
        if previous and previous["role"] == message["role"] == "assistant" and message.get("id") == last_id:
            previous["content"] += content
        elif previous and previous["role"] == message["role"] == "user" and _is_tool_result(entry):
            previous["content"] += content
        else:
            messages.append({"role": message["role"], "content": content})
        last_id = message.get("id")
    return messages


def _message_index(messages: list[dict[str, Any]], matches: Any, *, last: bool = False) -> int:
    found = [i for i, m in enumerate(messages) if matches(m)]
    assert found, "the rebuilt messages no longer have the shape this test damages"
    return found[-1] if last else found[0]


def _uses(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [b for b in content if b.get("type") == "tool_use"] if isinstance(content, list) else []


def _results(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []


def _where(problems: list[Any]) -> list[tuple[str, str, str]]:
    return [(p.kind, p.where, p.severity) for p in problems]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_messages_rebuilt_from_every_cli_version_are_one_valid_conversation(version):
    """The healthy shape every message test damages: roles alternate, parallel calls share one message."""
    messages = _api_messages(version)
    assert [m["role"] for m in messages] == ["user", "assistant"] * (len(messages) // 2)
    assert any(len(_uses(m)) == 2 for m in messages)  # the parallel calls, merged into one message
    assert check_history(messages) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_a_message_with_a_role_the_api_does_not_know_is_a_bad_role(version):
    """The resume's prompt under the old completion API's name for the user."""
    messages = _api_messages(version)
    prompt = _message_index(messages, lambda m: isinstance(m["content"], str), last=True)
    messages[prompt]["role"] = "human"
    [problem] = check_history(messages)
    assert (problem.kind, problem.where, problem.severity) == ("bad-role", f"message #{prompt}", "error")
    assert problem.message == "role 'human' (only user and assistant belong in messages)"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_transcript_entry_among_the_messages_is_a_bad_role(version):
    """A raw transcript line (type, uuid, message) put where its message belongs."""
    messages = _api_messages(version)
    lines = _basic(version)
    prompt = _message_index(messages, lambda m: isinstance(m["content"], str), last=True)
    messages[prompt] = _entry(lines[_index(lines, _is_prompt, last=True)])
    [problem] = check_history(messages)
    assert (problem.kind, problem.where) == ("bad-role", f"message #{prompt}")
    assert problem.message == f"not a message: {str(messages[prompt])[:80]}"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_message_missing_its_role_or_its_content_is_a_bad_role_and_the_check_reads_on(version):
    """{"role"} alone and {"content"} alone are not messages; the problems after them (and after a duplicated
    message) are still found."""
    messages = _api_messages(version)
    answer = _message_index(messages, lambda m: m["role"] == "assistant", last=True)
    messages.insert(answer + 1, copy.deepcopy(messages[answer]))
    messages[1:1] = [{"role": "user"}, {"content": "hi"}]
    messages.append({"role": "user"})
    assert [(p.kind, p.where) for p in check_history(messages)] == [
        ("bad-role", "message #1"), ("bad-role", "message #2"), ("duplicate-message", f"message #{answer + 3}"),
        ("bad-role", f"message #{len(messages) - 1}")]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_prompt_as_a_list_of_text_blocks_is_a_good_role(version):
    """The same prompt in the other form the API takes: still a user message."""
    messages = _api_messages(version)
    prompt = _message_index(messages, lambda m: isinstance(m["content"], str), last=True)
    messages[prompt]["content"] = [{"type": "text", "text": messages[prompt]["content"]}]
    assert check_history(messages) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_a_history_trimmed_to_start_with_the_assistant_is_first_not_user(version):
    """A context trimmer that cut the first prompt: the API would refuse the request."""
    messages = _api_messages(version)[1:]
    [problem] = check_history(messages)
    assert (problem.kind, problem.where) == ("first-not-user", "message #0")
    assert problem.message == "the history starts with 'assistant', the API needs a user message first"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_history_trimmed_to_start_at_a_prompt_is_fine(version):
    """Trimmed at the resume's prompt instead: a valid history of its own."""
    messages = _api_messages(version)
    assert check_history(messages[_message_index(messages, lambda m: isinstance(m["content"], str), last=True):]) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_a_prompt_right_after_a_tool_result_is_same_role_twice(version):
    """What a resume after a kill between a tool's result and the next request sends, if nothing merges them."""
    messages = _api_messages(version)
    answered = _message_index(messages, _results)
    prompt = _message_index(messages, lambda m: isinstance(m["content"], str), last=True)
    torn = messages[:answered + 1] + [messages[prompt]]
    assert _where(problems := check_history(torn)) == [("same-role-twice", f"message #{answered + 1}", "warning")]
    assert problems[0].message == "two user messages in a row"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_message_saved_twice_is_a_duplicate_message(version):
    """The final answer appended twice (a save retried): the duplicate, not two assistant messages in a row."""
    messages = _api_messages(version)
    messages.append(copy.deepcopy(messages[-1]))
    [problem] = check_history(messages)
    assert (problem.kind, problem.where) == ("duplicate-message", f"message #{len(messages) - 1}")
    assert problem.message == "the same assistant message twice in a row"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_same_prompt_and_answer_again_after_a_full_turn_is_no_duplicate(version):
    """Repeated, but not in a row: the user asked the same thing twice and got the same final answer."""
    messages = _api_messages(version)
    prompt = _message_index(messages, lambda m: isinstance(m["content"], str), last=True)
    messages += copy.deepcopy([messages[prompt], messages[-1]])
    assert check_history(messages) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_use_id_used_again_later_is_a_duplicate_tool_use(version):
    """The resumed run's call (and its result) carry the first call's id: a client that restarts its id counter."""
    messages = _api_messages(version)
    first_id = _uses(messages[1])[0]["id"]
    later = _message_index(messages, _uses, last=True)
    _uses(messages[later])[0]["id"] = first_id
    _results(messages[later + 1])[0]["tool_use_id"] = first_id
    [problem] = check_history(messages)
    assert (problem.kind, problem.where) == ("duplicate-tool-use", f"message #{later}")
    assert problem.message == f"tool_use id {first_id} also at message #1"


@pytest.mark.parametrize("version", VERSIONS)
def test_distinct_tool_use_ids_across_messages_are_no_duplicate_tool_use(version):
    """Five calls over two runs, each with an id of its own (the resume kept counting)."""
    messages = _api_messages(version)
    ids = [b["id"] for m in messages for b in _uses(m)]
    assert len(ids) == 5 == len(set(ids))
    assert check_history(messages) == []


def _parallel(messages: list[dict[str, Any]]) -> int:
    return _message_index(messages, lambda m: len(_uses(m)) == 2)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_parallel_call_without_its_result_is_an_unanswered_tool_use(version):
    """The answer to two parallel calls lost its second result: named at the assistant message, with the id."""
    messages = _api_messages(version)
    index = _parallel(messages)
    lost = messages[index + 1]["content"].pop()
    [problem] = check_history(messages)
    assert (problem.kind, problem.where) == ("unanswered-tool-use", f"message #{index}")
    assert problem.message == f"tool_use {lost['tool_use_id']} has no tool_result in the next message"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_history_cut_after_the_parallel_results_has_no_unanswered_tool_use(version):
    """Cut right after the message holding both results: every call answered."""
    messages = _api_messages(version)
    assert check_history(messages[:_parallel(messages) + 2]) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_result_given_twice_in_one_answer_is_a_duplicate_tool_result(version):
    """The answer to the parallel calls holds the first result twice: named at the answer, with the count."""
    messages = _api_messages(version)
    index = _parallel(messages)
    first = messages[index + 1]["content"][0]
    messages[index + 1]["content"].append(copy.deepcopy(first))
    [problem] = check_history(messages)
    assert (problem.kind, problem.where) == ("duplicate-tool-result", f"message #{index + 1}")
    assert problem.message == f"tool_use {first['tool_use_id']} answered 2 times"


@pytest.mark.parametrize("version", VERSIONS)
def test_two_tool_results_for_two_parallel_calls_are_no_duplicate(version):
    """Two results in one message, one per call."""
    messages = _api_messages(version)
    answer = messages[_parallel(messages) + 1]
    assert len({b["tool_use_id"] for b in _results(answer)}) == len(_results(answer)) == 2
    assert check_history(messages) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_result_the_message_before_did_not_ask_for_is_an_orphan(version):
    """The second parallel call lost from the assistant message; its result stays."""
    messages = _api_messages(version)
    index = _parallel(messages)
    gone = messages[index]["content"].pop()
    [problem] = check_history(messages)
    assert (problem.kind, problem.where) == ("orphan-tool-result", f"message #{index + 1}")
    assert problem.message == f"tool_result for {gone['id']}, which the message before did not ask for"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_result_answering_a_call_two_messages_back_is_an_orphan(version):
    """Lists are strict: a result must answer the message just before it (the API rejects anything else)."""
    messages = _api_messages(version)
    answered = _message_index(messages, _results)
    late = messages[:answered] + [{"role": "user", "content": "wait"}, {"role": "assistant", "content": "ok"},
                                  messages[answered]]
    problems = check_history(late)
    assert ("orphan-tool-result", f"message #{answered + 2}", "error") in _where(problems)


# --- every kind check.py can report is covered here ---------------------------------------------------------------

COVERED = {"corrupt-line", "duplicate-uuid", "broken-parent", "reordered", "second-root", "unanswered-tool-use",
           "orphan-tool-result", "duplicate-tool-result", "duplicate-tool-use", "lost-entry", "bad-role",
           "first-not-user", "same-role-twice", "duplicate-message"}


def test_every_problem_kind_in_check_py_has_its_tests_here():
    """A kind added to check.py fails this until it joins COVERED, with a firing and a quiet test above."""
    kinds = set(re.findall(r'[Pp]roblem\(\s*"([a-z-]+)"', CHECK_PY.read_text(encoding="utf-8")))
    assert kinds == COVERED


# --- the user's path: an agent's session file, a crash, a resume ----------------------------------------------------

# An agent in no SDK that keeps its session as Claude Code does: one JSON line per entry, chained by parentUuid, in
# $CLAUDE_CONFIG_DIR/sessions/<session>.jsonl.  Its tool runs a shell command.  Two habits, from the environment:
# AGENT_OPENS_ENTRIES=1 writes the start of an assistant line before the model answers and the rest after (a kill
# while it waits leaves a torn line; resuming, it skips lines that are not JSON and starts a new line, where the careful
# agent drops a torn last line);
# AGENT_REWRITES=1 rewrites the whole file when it resumes, every entry under a fresh uuid.
JSONL_AGENT = r'''#!/usr/bin/env python3
import json, os, pathlib, subprocess, sys, urllib.request, uuid

flag, session = sys.argv[1:3]
path = pathlib.Path(os.environ["CLAUDE_CONFIG_DIR"]) / "sessions" / f"{session}.jsonl"
path.parent.mkdir(parents=True, exist_ok=True)
opens_entries = os.environ.get("AGENT_OPENS_ENTRIES") == "1"
entries = []
if flag == "--resume":
    for line in path.read_text().splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            pass  # a line a crash tore: skipped
    if os.environ.get("AGENT_REWRITES") == "1":
        parent = None
        for entry in entries:
            entry["uuid"], entry["parentUuid"] = str(uuid.uuid4()), parent
            parent = entry["uuid"]
        path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
messages = [entry["message"] for entry in entries]
last = entries[-1]["uuid"] if entries else None
if path.exists() and not opens_entries:
    os.truncate(path, path.read_bytes().rfind(b"\n") + 1)  # drop a line a crash tore while it was written
out = path.open("a")
if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
    out.write("\n")


def head(kind):
    return {"type": kind, "uuid": str(uuid.uuid4()), "parentUuid": last, "sessionId": session}


def write(entry, message):
    global last
    out.write(json.dumps({**entry, "message": message}) + "\n")
    out.flush()
    messages.append(message)
    last = entry["uuid"]


write(head("user"), {"role": "user", "content": sys.stdin.read()})
tools = [{"name": "Bash", "description": "Run a shell command.", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}}}}]
while True:
    entry = head("assistant")
    if opens_entries:
        out.write(json.dumps(entry)[:-1] + ', "message": ')
        out.flush()
    request = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
        data=json.dumps({"model": "claude-x", "max_tokens": 256, "tools": tools, "messages": messages}).encode(),
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01",
                 "content-type": "application/json"})
    reply = json.load(urllib.request.urlopen(request))
    message = {"role": "assistant", "content": reply["content"]}
    if opens_entries:
        out.write(json.dumps(message) + "}\n")
        out.flush()
        messages.append(message)
        last = entry["uuid"]
    else:
        write(entry, message)
    calls = [block for block in reply["content"] if block["type"] == "tool_use"]
    if not calls:
        print("".join(block.get("text", "") for block in reply["content"]))
        break
    results = [{"type": "tool_result", "tool_use_id": call["id"],
                "content": subprocess.run(call["input"]["command"], shell=True, capture_output=True,
                                          text=True).stdout} for call in calls]
    write(head("user"), {"role": "user", "content": results})
'''

JSONL_CONFTEST = '''
import sys
from pathlib import Path

import pytest
from pytest_controlplane import CommandAgent, text, tool_use

AGENT = Path(__file__).parent / "jsonl_agent.py"
SCRIPT = [tool_use("Bash", {"command": "echo one"}), tool_use("Bash", {"command": "echo two"}), text("done")]


def jsonl_agent(**habits):
    return CommandAgent(lambda session_id, resume, fork: [sys.executable, str(AGENT)] + (
                            ["--resume", resume] if resume else ["--session", session_id]),
                        env=habits, transcript=lambda world, session_id: world.config_dir / "sessions" /
                                                                         f"{session_id}.jsonl")


@pytest.fixture
def agent(request):
    """The careful agent; a test module may set HABITS to give it one of the careless habits."""
    return jsonl_agent(**getattr(request.module, "HABITS", {}))


@pytest.fixture
def script():
    return SCRIPT
'''


def _jsonl_suite(pytester: pytest.Pytester, **modules: str) -> pytest.RunResult:
    pytester.makefile(".py", jsonl_agent=JSONL_AGENT)
    pytester.makeconftest(JSONL_CONFTEST)
    pytester.makepyfile(**modules)
    return pytester.runpytest("-p", "no:cacheprovider", "-s")


CRASH_AND_RESUME = '''
def test_crash_then_resume(agent_session, scripted_model, script):
    scripted_model(script)
    crashed = agent_session.crash("Run the two commands.", at="request 2")
    print("AFTER THE CRASH:", "; ".join(map(str, crashed.before)) or "consistent")
    agent_session.resume("Continue where you left off.")
    agent_session.assert_consistent()
'''


def test_a_line_torn_by_a_crash_is_named_by_assert_consistent(pytester):
    """Killed while it waits for the model, the agent leaves half an assistant line; it resumes past it, and
    `assert_consistent()` fails naming the corrupt line and its start.  The careful agent, crashed at the same
    point, resumes to a consistent history."""
    result = _jsonl_suite(pytester, test_careful=CRASH_AND_RESUME,
                          test_torn='HABITS = {"AGENT_OPENS_ENTRIES": "1"}\n' + CRASH_AND_RESUME)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["test_careful.py AFTER THE CRASH: consistent*"])
    result.stdout.fnmatch_lines(["test_torn.py AFTER THE CRASH: line 4: corrupt-line: not JSON: "
                                 "'{\"type\": \"assistant\", \"uuid\": \"*"])
    result.stdout.fnmatch_lines(["*HistoryInconsistent: The session history is inconsistent:",
                                 "*  line 4: corrupt-line: not JSON: '{\"type\": \"assistant\", \"uuid\": \"*'"])
    result.stdout.fnmatch_lines(["FAILED test_torn.py::test_crash_then_resume - *"])


CRASH_EVERYWHERE = '''
def test_every_crash_point(agent_session, script):
    report = agent_session.crash_everywhere("Run the two commands.", script=script)
    print(report)
    report.assert_consistent()
'''


def test_a_resume_that_rewrites_the_entries_is_reported_as_lost_entries(pytester):
    """Resuming, the careless agent writes its session again under fresh uuids: the crash report names each entry
    stored before the crash as lost (the model still sees all of it, and the file alone checks clean).  The careful
    agent, crashed at the same points, loses nothing."""
    result = _jsonl_suite(pytester, test_careful=CRASH_EVERYWHERE,
                          test_rewrites='HABITS = {"AGENT_REWRITES": "1"}\n' + CRASH_EVERYWHERE)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_rewrites.py::test_every_crash_point - *"])
    result.stdout.fnmatch_lines(["test_careful.py 7 crash point(s), 7 consistent after resume:",
                                 "request 1 * after the crash: consistent", "*resumed: consistent"])
    result.stdout.fnmatch_lines(["save 1 * after the crash: line 1: corrupt-line: not JSON: '{\"type\": \"user\", *",
                                 "*resumed: consistent"])
    result.stdout.fnmatch_lines([
        "*HistoryInconsistent: 6 crash point(s) did not resume to one consistent history.",
        "*request 1 * after the crash: consistent",
        "*resumed: line 1: lost-entry: entry * existed before the crash and is gone after the resume",
        "*request 3 * after the crash: consistent",
        "*resumed: line 1: lost-entry: entry *; line 2: lost-entry: entry *; line 3: lost-entry: *; "
        "line 4: lost-entry: *; line 5: lost-entry: entry * existed before the crash and is gone after the resume"])


def test_crash_everywhere_names_a_line_torn_by_the_crash(pytester):
    """The report of every crash point names the torn line, right after the crash and after the resume."""
    result = _jsonl_suite(pytester, test_torn='HABITS = {"AGENT_OPENS_ENTRIES": "1"}\n' + CRASH_EVERYWHERE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*HistoryInconsistent: * crash point(s) did not resume to one consistent history.",
                                 "*request 2 * after the crash: line 4: corrupt-line: not JSON: *",
                                 "*resumed: line 4: corrupt-line: not JSON: *"])


# A LoopAgent (the reference loop on the session store) with two tools; `WINDOW = True` in a test module gives it a
# store that keeps only the newest exchange (from the last prompt on): a history window applied when saving.
LOOP_CONFTEST = '''
import pytest
from pytest_controlplane import LoopAgent, SessionStore


def tools(workspace):
    def append(path, line):
        with open(workspace / path, "a") as out:
            out.write(line + "\\n")
        return "ok"

    def read_file(path):
        return (workspace / path).read_text()

    return {"system": "", "tools": [{"name": n, "description": n, "input_schema": {"type": "object"}}
                                    for n in ("append", "read_file")],
            "tool_impls": {"append": append, "read_file": read_file}}


class NewestExchangeStore(SessionStore):
    def save(self, name, messages):
        start = max(i for i, m in enumerate(messages) if m["role"] == "user" and isinstance(m["content"], str))
        return super().save(name, messages[start:])


class WindowedLoopAgent(LoopAgent):
    def store(self, world, crash=None):
        plain = super().store(world, crash)
        return NewestExchangeStore(plain.directory, root=plain.root, reading_tools=plain.reading_tools,
                                   before_replace=plain.before_replace)


@pytest.fixture
def agent(request):
    """The session store as shipped, or (WINDOW = True in the test module) one that keeps the newest exchange."""
    return (WindowedLoopAgent if getattr(request.module, "WINDOW", False) else LoopAgent)(tools)
'''

LOOP_CRASH_EVERYWHERE = '''
from pytest_controlplane import text, tool_use


def test_every_crash_point(agent_session):
    report = agent_session.crash_everywhere(
        "Record the payment.", before=["Remember the order."],
        script=[tool_use("append", {"path": "log.txt", "line": "paid"}), text("done")])
    print(report)
    report.assert_consistent()
'''


def test_a_store_that_drops_older_messages_on_save_is_reported_as_lost_entries(pytester):
    """Message lists: the session stored before the crash must be the start of the one after the resume.  A store
    that keeps a window of the newest exchange fails every crash point with lost-entry (its file alone is a valid
    conversation); the store as shipped, crashed at the same points, loses nothing."""
    pytester.makeconftest(LOOP_CONFTEST)
    pytester.makepyfile(test_plain=LOOP_CRASH_EVERYWHERE, test_windowed="WINDOW = True\n" + LOOP_CRASH_EVERYWHERE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["test_plain.py 6 crash point(s), 6 consistent after resume:",
                                 "request 1 * after the crash: consistent", "*resumed: consistent"])
    result.stdout.fnmatch_lines([
        "*HistoryInconsistent: 6 crash point(s) did not resume to one consistent history.",
        "*request 1 * after the crash: consistent",
        "*resumed: lost-entry: the messages stored before the crash are not the start of the history after the "
        "resume",
        "*save 1 * after the crash: consistent",
        "*resumed: lost-entry: the messages stored before the crash are not the start of the history after the "
        "resume"])
    plain = result.stdout.str().split("test_windowed.py")[0]
    assert "lost-entry" not in plain


def test_check_history_takes_a_path_or_messages_and_says_so_for_merged_entries(tmp_path):
    """The entries `read_transcript` gives (what agent_session.history holds for a transcript) are not messages:
    checking them would report nonsense, so it is refused with what to pass instead; the path itself is checked,
    with non-ASCII text read as UTF-8."""
    from pytest_controlplane.history.transcript import read_transcript

    path = tmp_path / "t.jsonl"
    lines = _basic(VERSIONS[-1])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    entries = read_transcript(path)
    with pytest.raises(ConfigError) as raised:
        check_history(entries)
    assert str(raised.value) == ("check_history takes the transcript's path (agent_session.transcript_path()) or a "
                                 "messages list, not merged transcript entries.\nPass agent_session.transcript_path() "
                                 "(or the file's path) instead.")
    assert check_history(path) == [] and check_history(str(path)) == []


# --- read_transcript: the entries a check and agent_session.history are built from ---------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_read_transcript_merges_the_lines_of_one_assistant_message_and_numbers_entries_by_line(tmp_path, version):
    """The CLI writes one assistant message with two blocks (a text, then the parallel tool calls) as lines sharing
    `message.id`: one entry at the first line's number, holding every block in order and both uuids.  Blank lines
    count in the numbering; a user line never merges."""
    from pytest_controlplane.history.transcript import read_transcript

    lines = _basic(version)
    raw = [_entry(line) for line in lines]
    ids = [e["message"].get("id") if e.get("type") == "assistant" else None for e in raw]
    twice = next(i for i, message_id in enumerate(ids) if message_id and ids.count(message_id) == 2)
    again = ids.index(ids[twice], twice + 1)
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(["", *lines]) + "\n", encoding="utf-8")  # a blank first line: entries start at 2
    entries = read_transcript(path)
    assert len(entries) == len(lines) - 1
    assert [e["line"] for e in entries] == [n + 2 for n in range(len(lines)) if n != again]
    merged = entries[twice]
    assert merged["message"]["content"] == raw[twice]["message"]["content"] + raw[again]["message"]["content"]
    assert merged["uuids"] == [raw[twice]["uuid"], raw[again]["uuid"]]
    assert all("uuids" not in e for i, e in enumerate(entries) if i != twice)
    assert [e.get("uuid") for e in entries] == [e.get("uuid") for i, e in enumerate(raw) if i != again]
    # A user line with the same message id as an assistant line's stays an entry of its own.
    user = next(i for i, e in enumerate(raw) if e.get("type") == "user" and isinstance(e.get("message"), dict))
    raw[user]["message"]["id"] = ids[twice]
    path.write_text("\n".join(json.dumps(e) for e in raw) + "\n", encoding="utf-8")
    assert len(read_transcript(path)) == len(lines) - 1


def test_read_transcript_keeps_lines_of_shapes_it_cannot_merge_as_they_are(tmp_path):
    """An assistant line whose message is not an object, and a line of the same message whose content is a string
    (not a list of blocks): read as written, never merged or failed on."""
    from pytest_controlplane.history.transcript import read_transcript

    raw = [{"type": "assistant", "uuid": "u1", "message": "a summary written as text"},
           {"type": "assistant", "uuid": "u2", "message": {"id": "m1", "role": "assistant", "content": "plain"}},
           {"type": "assistant", "uuid": "u3", "message": {"id": "m1", "role": "assistant",
                                                           "content": [{"type": "text", "text": "more"}]}}]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in raw) + "\n", encoding="utf-8")
    entries = read_transcript(path)
    assert [e["line"] for e in entries] == [1, 2]
    assert entries[0]["message"] == "a summary written as text"
    assert entries[1]["message"]["content"] == "plain" and entries[1]["uuids"] == ["u2", "u3"]


def test_read_transcript_says_when_there_is_no_transcript(tmp_path):
    from pytest_controlplane.errors import ControlPlaneError
    from pytest_controlplane.history.transcript import read_transcript

    with pytest.raises(ControlPlaneError) as raised:
        read_transcript(tmp_path / "nope.jsonl")
    assert str(raised.value).startswith(f"No transcript at {tmp_path / 'nope.jsonl'}.")
    assert raised.value.hint == ("The agent saved no session there: did the run reach the model, and is this the "
                                 "session id it reported?")
    assert type(raised.value).__name__ == "SessionNotFound" and raised.value.path == tmp_path / "nope.jsonl"


def test_read_transcript_says_which_line_is_torn_and_check_history_names_it(tmp_path):
    """A transcript cut mid-line by a crash is no JSONDecodeError from deep inside: the user is told the line and
    how to see every problem; check_history of the file reports the same line as corrupt."""
    from pytest_controlplane.errors import SessionCorrupt
    from pytest_controlplane.history.transcript import read_transcript

    path = tmp_path / "t.jsonl"
    lines = _basic(VERSIONS[-1])
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40], encoding="utf-8")
    with pytest.raises(SessionCorrupt) as raised:
        read_transcript(path)
    assert str(raised.value).startswith(f"Line 3 of the transcript {path} is not JSON (")
    assert raised.value.path == path and "check_history(path)" in raised.value.hint
    assert [(p.kind, p.line) for p in check_history(path) if p.kind == "corrupt-line"] == [("corrupt-line", 3)]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_tool_calls_a_resume_must_show_the_model_are_read_from_the_transcript(version):
    """After a crash, the first request of the resume must carry every stored tool_use id (else
    model-missed-history): they are read off the transcript's lines, in order, past a torn one."""
    from pytest_controlplane.recovery import tool_use_ids
    from pytest_controlplane.history.stored import JSONL, MESSAGES, Stored

    lines = _basic(version)
    expected = [b["id"] for line in lines for b in _blocks(_entry(line), "tool_use")]
    assert len(expected) >= 3
    assert tool_use_ids(Stored(JSONL, lines[:2] + ['{"type": "assistant", "mess'] + lines[2:])) == expected
    messages = _api_messages(version)
    assert tool_use_ids(Stored(MESSAGES, messages)) == expected and tool_use_ids(None) == []
