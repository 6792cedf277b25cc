"""Snapshots of directory trees: every entry's type, mode, size, inode, symlink target and content hash.

    before = snapshot(workspace, home)
    ...                                   # the agent runs
    changes = before.changes_to(snapshot(workspace, home, contents=before.contents))

Hashing is the expensive part, so a `Contents` store remembers each file version's hash by its
stat signature (device, inode, size, mtime, ctime): a later snapshot hashes only files whose
signature changed.  The signature is trustworthy because nothing in user space can set ctime;
only a file changed within the filesystem's timestamp granularity of a snapshot could keep it,
so such "racy" entries (git's term) are never trusted and are hashed again next time.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .diff import Change

KEEP_CONTENT_BYTES = 64 * 1024  # file versions up to this size are kept, so a failure can show their diff
RACY_WINDOW_NS = 50_000_000  # timestamps are jiffy-coarse (4-10 ms); anything this close to a snapshot is re-hashed


@dataclass(frozen=True, slots=True)
class Entry:
    """One path as it was: a file, dir, symlink or other (socket, fifo, device)."""

    kind: str
    mode: int  # permission bits
    size: int
    ino: int
    dev: int
    mtime_ns: int
    target: str | None = None  # what a symlink points to
    digest: str | None = None  # sha256 of a file's content

    @property
    def inode(self) -> tuple[int, int]:
        return self.dev, self.ino


class Contents:
    """File hashes by stat signature (so unchanged files are not read twice) and small files' bytes by hash."""

    def __init__(self) -> None:
        self._digests: dict[tuple[int, int, int, int, int], str] = {}
        self._bytes: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self.hashed = 0  # files read so far (benchmarks and tests look at it)

    def digest(self, path: str, st: os.stat_result, taken_ns: int) -> str:
        signature = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        with self._lock:
            known = self._digests.get(signature)
        if known is not None:
            return known
        digest = self._hash(path, st.st_size)
        racy = max(st.st_mtime_ns, st.st_ctime_ns) >= taken_ns - RACY_WINDOW_NS
        if not racy:
            with self._lock:
                self._digests[signature] = digest
        return digest

    def _hash(self, path: str, size: int) -> str:
        self.hashed += 1
        try:
            with open(path, "rb") as handle:
                if size <= KEEP_CONTENT_BYTES:
                    data = handle.read(KEEP_CONTENT_BYTES + 1)
                    digest = hashlib.sha256(data).hexdigest()
                    if len(data) <= KEEP_CONTENT_BYTES:
                        with self._lock:
                            self._bytes.setdefault(digest, data)
                    return digest
                return hashlib.file_digest(handle, "sha256").hexdigest()
        except FileNotFoundError:
            return "vanished"  # deleted while we walked: the next snapshot says so
        except OSError as error:
            return f"unreadable:{error.errno}"

    def read(self, digest: str | None) -> bytes | None:
        """The bytes of a small file version seen in some snapshot, or None if not kept."""
        with self._lock:
            return self._bytes.get(digest) if digest else None


@dataclass
class Snapshot:
    """Every entry under some roots at one moment, by absolute path (symlinks not followed)."""

    roots: tuple[str, ...]
    entries: dict[str, Entry]
    contents: Contents
    taken_ns: int

    def covers(self, path: str) -> bool:
        """Whether `path` (absolute, normalised) lies under one of the roots (or is one)."""
        return any(under(path, root) for root in self.roots)

    def changes_to(self, after: Snapshot) -> list[Change]:
        """What changed from this snapshot to `after`."""
        from .diff import compare

        return compare(self, after)


def snapshot(*roots: str | os.PathLike[str], contents: Contents | None = None) -> Snapshot:
    """Walk `roots` (directories or single files; missing ones are recorded as empty) without following symlinks."""
    contents = contents or Contents()
    taken_ns = time.time_ns()
    entries: dict[str, Entry] = {}
    normalised = tuple(dict.fromkeys(absolute(root) for root in roots))
    for root in normalised:
        try:
            st = os.lstat(root)
        except OSError:
            continue
        entries[root] = _entry(root, st, contents, taken_ns)
        if stat.S_ISDIR(st.st_mode):
            _walk(root, entries, contents, taken_ns)
    return Snapshot(normalised, entries, contents, taken_ns)


def under(path: str, root: str) -> bool:
    """Whether `path` is `root` or lies beneath it (both absolute and normalised, as spelled: no link resolved)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def absolute(path: str | os.PathLike[str]) -> str:
    """`path` made absolute and normalised (`..`, `.`, `//` applied lexically, symlinks left alone)."""
    text = os.path.normpath(os.path.abspath(os.fspath(path)))
    return "/" + text.lstrip("/") if text.startswith("//") else text


def _walk(directory: str, entries: dict[str, Entry], contents: Contents, taken_ns: int) -> None:
    pending = [directory]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as listing:
                items = list(listing)
        except OSError:
            continue  # vanished or unreadable while we walked
        for item in items:
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if item.path in entries:
                continue
            entries[item.path] = _entry(item.path, st, contents, taken_ns)
            if stat.S_ISDIR(st.st_mode):
                pending.append(item.path)


def _entry(path: str, st: os.stat_result, contents: Contents, taken_ns: int) -> Entry:
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return Entry(
            "file",
            stat.S_IMODE(mode),
            st.st_size,
            st.st_ino,
            st.st_dev,
            st.st_mtime_ns,
            digest=contents.digest(path, st, taken_ns),
        )
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return Entry("symlink", stat.S_IMODE(mode), st.st_size, st.st_ino, st.st_dev, st.st_mtime_ns, target=target)
    kind = "dir" if stat.S_ISDIR(mode) else "other"
    return Entry(kind, stat.S_IMODE(mode), st.st_size, st.st_ino, st.st_dev, st.st_mtime_ns)


def resolve(path: str, snap: Snapshot, *, limit: int = 40) -> str:
    """`path` with every symlink along it resolved as `snap` saw them (the live filesystem outside its roots)."""
    parts = [part for part in path.split("/") if part]
    resolved = "/"
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            resolved = os.path.dirname(resolved) or "/"
            continue
        candidate = os.path.join(resolved, part)
        entry = snap.entries.get(candidate)
        target: str | None = None
        if entry is not None:
            target = entry.target if entry.kind == "symlink" else None
        elif not snap.covers(candidate) and os.path.islink(candidate):
            target = os.readlink(candidate)
        if target is None or hops >= limit:
            resolved = candidate
            continue
        hops += 1
        parts = [p for p in target.split("/") if p] + parts
        if target.startswith("/"):
            resolved = "/"
    return resolved


def iter_parents(path: str) -> Iterable[str]:
    """The directories above `path`, nearest first."""
    parent = os.path.dirname(path)
    while parent and parent != path:
        yield parent
        path, parent = parent, os.path.dirname(parent)
