"""What the agent's processes read in the workspace, tool call by tool call: the sources of each result (a resumed
session that answers from a result whose source has changed since is stale: history/stale.py).

Linux inotify watches every directory of the workspace, during a run, for a file read (IN_ACCESS) or closed unwritten
(IN_CLOSE_NOWRITE: opened to read, an empty or mapped file too); a file only written is no source.  The events are
drained at each checkpoint, before its snapshot, and what the snapshot itself causes is drained after it and dropped:
the agent is quiescent at a checkpoint, so what is kept is what its processes read between two checkpoints, put down
to every call running then.  What the agent reads outside any call (as it starts, between its model requests) is no
call's; what a hook read while it ran is its own, and so are the CLI's own instructions and settings (cli_own.py).  A
directory made during a call is watched from the next checkpoint on.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .attribution import Checkpoint, intervals
from .cli_own import cli_own_read
from .snapshot import Snapshot, under

_ACCESS, _CLOSE_NOWRITE, _OVERFLOW, _ISDIR = 0x1, 0x10, 0x4000, 0x40000000
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name, NUL-padded to len


class ReadWatch:
    """Inotify watches for reads on the directories of one tree, for one run (`close()` at its end)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.problem = ""  # why reads are not (all) known: no inotify, a limit reached, events lost
        self._dirs: dict[int, str] = {}
        self._fd = -1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._add_watch = libc.inotify_add_watch
            self._fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (AttributeError, OSError, TypeError):
            self.problem = "this system has no inotify (Linux has)"
            return
        if self._fd < 0:
            self.problem = f"inotify_init1: {os.strerror(ctypes.get_errno())} (see fs.inotify.max_user_instances)"

    def add(self, snap: Snapshot) -> None:
        """Watch every directory of `snap` under the root that is not watched yet."""
        known = set(self._dirs.values())
        for path, entry in snap.entries.items():
            if self._fd < 0 or entry.kind != "dir" or path in known or not under(path, self.root):
                continue
            wd = self._add_watch(self._fd, os.fsencode(path), _ACCESS | _CLOSE_NOWRITE)
            if wd < 0 and ctypes.get_errno() == errno.ENOSPC:
                self.problem = "inotify_add_watch: no watches left (see fs.inotify.max_user_watches)"
            elif wd >= 0:
                self._dirs[wd] = path

    def drain(self, *, keep: bool = True) -> frozenset[str]:
        """The files read since the last drain (`keep=False`: a snapshot's own reads, dropped)."""
        found: set[str] = set()
        while self._fd >= 0:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                break
            offset = 0
            while offset < len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size : offset + _EVENT.size + size].rstrip(b"\0")
                offset += _EVENT.size + size
                if keep and mask & _OVERFLOW:
                    self.problem = "more reads than inotify could queue (see fs.inotify.max_queued_events)"
                elif keep and name and not mask & _ISDIR and wd in self._dirs:
                    found.add(os.path.join(self._dirs[wd], os.fsdecode(name)))
        return frozenset(found)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


@dataclass
class CallReads:
    """What one tool call read: the workspace files its processes read, and the world as the call left it."""

    run: int
    call: Any  # the ToolCall
    snap: Snapshot
    paths: set[str] = field(default_factory=set)


def reads_by_call(
    run: int, points: list[Checkpoint], calls: dict[Any, tuple[Any, int]], asked: dict[int, list[str]], workspace: str
) -> list[CallReads]:
    """For each call of a run, what it read (see the module docstring): what was read while it ran.  A call runs from
    its "pre" checkpoint to its "post" (calls run side by side: each is given what was read meanwhile); a call seen
    only through the model's exchanges, from the request its answer asked for it to the next request."""
    found: dict[str, CallReads] = {}
    running: set[Any] = set()
    request = -1  # the last model request (its index)
    for i, windows, _, _ in intervals(points):
        point, after = points[i], points[i + 1]
        if point.kind == "pre":
            running.add(point.ref)
        elif point.kind == "post":
            running.discard(point.ref)
        elif point.kind == "request":
            request = point.ref
        unseen = {ref for ref in asked.get(request, []) if ref in calls and not calls[ref][0].observed}
        read = set() if windows else {p for p in after.read if _sourced(p, workspace)}  # a hook's reads are its own
        for ref in (running & calls.keys()) | unseen:
            seen = found.setdefault(ref, CallReads(run, calls[ref][0], after.snap))
            seen.snap = after.snap
            seen.paths |= read
    return list(found.values())


def _sourced(path: str, workspace: str) -> bool:
    """Whether a file read can be a tool's source: in the workspace, and not one the CLI reads for itself."""
    return under(path, workspace) and not cli_own_read(os.path.relpath(path, workspace))


def version(snap: Snapshot, path: str) -> tuple[str | None, str | None]:
    """A file as `snap` saw it: its content's hash (None: no file there) and its text (None too when not kept)."""
    entry = snap.entries.get(path)
    if entry is None or entry.kind != "file":
        return None, None
    data = snap.contents.read(entry.digest)
    return entry.digest, None if data is None else data.decode("utf-8", "replace")


class ReadOracle:
    """What Effects knows of reads: a watch during each run, and what each call read."""

    workspace: str
    reads: list[CallReads]  # what each tool call of every run so far read
    unwatched: str = ""  # why some run's reads are not (all) known ("" when they are)
    _watch: ReadWatch | None = None
    _runs: list[Any]

    def at_start(self, run: int) -> Snapshot:
        """The world as run `run` (counted from 1) found it."""
        return self._runs[run - 1].baseline

    def _watching(self, take: Callable[[], Snapshot]) -> tuple[frozenset[str], Snapshot]:
        """What was read since the last checkpoint, and a snapshot taken now (its own reads dropped)."""
        if self._watch is None:
            self._watch = ReadWatch(self.workspace)
        read = self._watch.drain()
        snap = take()
        self._watch.add(snap)
        self._watch.drain(keep=False)
        return read, snap

    def _note_reads(self, run: int, points: list[Checkpoint], calls: dict[Any, tuple[Any, int]], asked: Any) -> None:
        """The run has ended: stop watching, and put what was read down to its calls."""
        if self._watch is not None:
            self.unwatched = self.unwatched or self._watch.problem
            self._watch.close()
            self._watch = None
        self.reads += reads_by_call(run, points, calls, asked, self.workspace)
