"""Diffs a person can read: a one-word change in a 500-character line shows as that word, with a little context.

    compact(unified_diff_lines)   a line replaced by another becomes one `~` line of the changed words:
                                  `~ …"content": "Summarise [-todo.txt-]{+notes.txt+} and reply"…`

Changed words are marked as wdiff marks them, `[-removed-]{+added+}`; the unchanged text between them keeps `CONTEXT`
characters on each side, the rest is an ellipsis.  Short lines are left as the unified diff has them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

CONTEXT = 30  # characters of unchanged text kept beside each change
LONG = 100  # a replaced line longer than this is shown as its changed words
_TOKENS = re.compile(r"\w+|\s+|[^\w\s]")


def changed_words(old: str, new: str, context: int = CONTEXT) -> str:
    """`new` as a change of `old`: the changed words marked, `context` characters of what did not change beside."""
    before, after = _TOKENS.findall(old), _TOKENS.findall(new)
    codes = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    if all(tag == "equal" for tag, *_ in codes):
        return new
    pieces = []
    for number, (tag, i1, i2, j1, j2) in enumerate(codes):
        if tag == "equal":
            pieces.append(_clip("".join(before[i1:i2]), context, first=number == 0, last=number == len(codes) - 1))
            continue
        removed, added = "".join(before[i1:i2]), "".join(after[j1:j2])
        pieces.append((f"[-{removed}-]" if removed else "") + (f"{{+{added}+}}" if added else ""))
    return "".join(pieces)


def _clip(text: str, context: int, *, first: bool, last: bool) -> str:
    """Unchanged text kept only next to the changes: its end (before a change), its start (after one), or both."""
    keep_start = 0 if first else context
    keep_end = 0 if last else context
    if len(text) <= keep_start + keep_end + 1:
        return text
    head, tail = text[:keep_start], text[len(text) - keep_end :] if keep_end else ""
    head = head[: head.rfind(" ") + 1] or head if " " in head.strip() else head  # whole words where it can
    tail = tail[tail.find(" ") :] if " " in tail.strip() else tail
    return head + "…" + tail


def compact(lines: Iterable[str], long: int = LONG) -> list[str]:
    """A unified diff with each long line that was replaced by one other shown as its changed words (`~`)."""
    lines = list(lines)
    shown: list[str] = []
    index = 0
    while index < len(lines):
        removed = _run(lines, index, "-")
        added = _run(lines, index + len(removed), "+")
        if not removed or len(removed) != len(added):
            shown.extend(removed + added or [lines[index]])
            index += len(removed) + len(added) or 1
            continue
        for old, new in zip(removed, added, strict=True):
            if max(len(old), len(new)) > long:
                shown.append("~ " + changed_words(old[1:], new[1:]).strip())
            else:
                shown.extend([old, new])
        index += len(removed) + len(added)
    return shown


def _run(lines: list[str], start: int, sign: str) -> list[str]:
    """The lines from `start` that begin with `sign` (a file header `---`/`+++` is not one)."""
    run = []
    for line in lines[start:]:
        if not line.startswith(sign) or line.startswith(sign * 3):
            break
        run.append(line)
    return run
