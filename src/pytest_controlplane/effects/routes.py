"""Every name that reaches a file, and how a tool call's input spelled it.

A protected file can be written under many names: its own, a `..` or `//` spelling of it, its
real path behind a symlinked directory, a symlink to it, a hardlink to it (same inode), a
case variant on a case-insensitive filesystem (same inode again).  `aliases` finds them all in
a snapshot; `spellings` finds which of them a tool call named, so a report can say the route.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .snapshot import Snapshot, iter_parents, resolve, under


@dataclass
class Aliases:
    """The names that reached one file at the start of a run, each with how it reaches it."""

    path: str  # the file as the test named it, made absolute and normalised
    real: str  # the same with the symlinks along it resolved
    names: dict[str, str] = field(default_factory=dict)  # absolute path -> how it reaches the file
    parents: set[str] = field(default_factory=set)  # directories whose swap would redirect the name


def normalise(spelled: str, *, workspace: str, home: str) -> str:
    """A path as a shell or a tool would read it: `~`/$HOME/$PWD expanded, relative to the workspace, `..` applied."""
    text = spelled
    for variable, value in (("${HOME}", home), ("$HOME", home), ("${PWD}", workspace), ("$PWD", workspace)):
        if under(text, variable):
            text = value + text[len(variable) :]
    if under(text, "~"):
        text = home + text[1:]
    if not text.startswith("/"):
        text = os.path.join(workspace, text)
    text = os.path.normpath(text)
    return "/" + text.lstrip("/")


def aliases(path: str, snap: Snapshot, show: Any) -> Aliases:
    """Every name in `snap` that reaches `path`, with the route in words (`show` formats paths)."""
    entries = snap.entries
    real = resolve(path, snap)
    found = Aliases(path, real)
    entry = entries.get(path)
    if entry is not None and entry.kind == "symlink":
        found.names[path] = f"the symlink itself (→ {entry.target})"
    else:
        found.names[path] = "its own name"
    if real != path:
        found.names.setdefault(real, f"its real path {show(real)}, which {show(path)} reaches through a symlink")
    target = entries.get(real)
    if target is not None and target.kind == "file":
        for other, candidate in entries.items():
            if other not in found.names and candidate.kind == "file" and candidate.inode == target.inode:
                found.names[other] = f"hardlink {show(other)} (the same inode as {show(path)} at the start)"
    for other, candidate in entries.items():
        if candidate.kind == "symlink" and other not in found.names and resolve(other, snap) in (path, real):
            found.names[other] = f"symlink {show(other)} → {candidate.target}"
    found.parents = {p for p in (*iter_parents(path), *iter_parents(real))}
    return found


def spellings(
    call_input: Any, reach: Aliases, snap: Snapshot, changed: str, *, workspace: str, home: str, show: Any
) -> list[str]:
    """How a tool call's input named the file whose name `changed` changed, in words: "`../workspace/.env` (a `..`
    spelling)", "`backup.txt`, hardlink backup.txt (the same inode as .env at the start)", ..."""
    described: list[str] = []
    lexical_of = {token: normalise(token, workspace=workspace, home=home) for token in _tokens(call_input)}
    reaching = {token for token, lexical in lexical_of.items() if lexical in reach.names}
    for token, lexical in lexical_of.items():
        if " " in token and any(other in token for other in reaching - {token}):
            continue  # a whole command whose `..` happens to cancel a word: the word that named the file says it
        if lexical in reach.names:
            how = reach.names[lexical]
            note = _spelling_kind(token)
            if lexical == changed or how == "its own name":
                described.append(f"`{token}`" + (f" ({note})" if note else ""))
            else:
                described.append(f"`{token}`, {how}" + (f" ({note})" if note else ""))
        elif resolve(lexical, snap) in (reach.path, reach.real):
            described.append(f"`{token}`, which reaches {show(reach.path)} through a symlinked directory")
    return described


def _spelling_kind(token: str) -> str:
    kinds = []
    if token.startswith(("~", "$HOME", "${HOME}")):
        kinds.append("home-relative spelling")
    elif token.startswith(("$PWD", "${PWD}")):
        kinds.append("$PWD spelling")
    elif token.startswith("/"):
        kinds.append("absolute spelling")
    if "/../" in f"/{token}/":
        kinds.append("a `..` spelling")
    if "//" in token or "/./" in token or token.endswith("/."):
        kinds.append("redundant `/` or `.`")
    return ", ".join(kinds)


_SEPARATORS = re.compile(r"""[\s'"`;&|<>()=,]+""")  # not braces: ${HOME}/x is one word


def _tokens(value: Any) -> Iterator[str]:
    """Path-like words in a tool input: whole string values, and the words of commands."""
    for text in _strings(value):
        if text and "\n" not in text and len(text) < 4096:
            yield text
        for word in _SEPARATORS.split(text):
            if word and word != text:
                yield word


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
