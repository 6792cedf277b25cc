"""Diffs a person can read: a one-word change in a long line shows as that word with a little context."""

from __future__ import annotations

import difflib

from pytest_controlplane.word_diff import changed_words, compact

PROMPT = ('{"role": "user", "content": "' + "Keep the notes short and in the order they came. " * 5
          + "Summarise todo.txt and reply briefly. " + "Never write outside the workspace. " * 5 + '"}')  # fmt: skip


def unified(old: list[str], new: list[str]) -> list[str]:
    return list(difflib.unified_diff(old, new, "recorded", "now", lineterm="", n=1))


def test_a_one_word_change_in_a_long_line_is_shown_as_that_word():
    assert len(PROMPT) > 400
    shown = compact(unified(["[", "  " + PROMPT, "]"], ["[", "  " + PROMPT.replace("todo.txt", "notes.txt"), "]"]))
    changed = [line for line in shown if line.startswith("~ ")]
    assert changed == ["~ … order they came. Summarise [-todo-]{+notes+}.txt and reply briefly. Never …"]
    assert shown[:3] == ["--- recorded", "+++ now", "@@ -1,3 +1,3 @@"]


def test_several_changes_each_keep_their_context():
    old = " ".join(f"word{i}" for i in range(60))
    new = old.replace("word10 ", "WORD10 ").replace("word50 ", "")
    assert changed_words(old, new) == (
        "… word6 word7 word8 word9 [-word10-]{+WORD10+} word11 word12 word13 word14 … word46 word47 word48 word49 "
        "[-word50 -]word51 word52 word53 word54 …"
    )


def test_short_lines_and_uneven_changes_stay_as_the_unified_diff_has_them():
    short = unified(["a", "colour: red", "b"], ["a", "colour: blue", "b"])
    assert compact(short) == short
    uneven = unified(["x" * 200], ["y" * 200, "z" * 200])  # one line became two: no pairs to word-diff
    assert compact(uneven) == uneven
    assert changed_words("same words", "same words") == "same words"


def test_a_file_report_shows_a_one_word_change_as_that_word(tmp_path):
    """The effects oracle's report of a changed file: a long line with one word changed, and its quiet twin, a short
    line, shown as the unified diff has it."""
    import pytest

    from pytest_controlplane import EffectViolation
    from pytest_controlplane.effects import Effects

    (tmp_path / "prompt.md").write_text(PROMPT + "\nKEY=1\n")
    effects = Effects(tmp_path)
    effects.begin()
    (tmp_path / "prompt.md").write_text(PROMPT.replace("todo.txt", "notes.txt") + "\nKEY=2\n")
    effects.end([])
    with pytest.raises(EffectViolation) as raised:
        effects.assert_not_written("prompt.md")
    report = [line.strip() for line in str(raised.value).splitlines()]
    assert "~ … order they came. Summarise [-todo-]{+notes+}.txt and reply briefly. Never …" in report
    assert ["-KEY=1", "+KEY=2"] == [line for line in report if "KEY=" in line]
    assert not [line for line in report if len(line) > 200]
