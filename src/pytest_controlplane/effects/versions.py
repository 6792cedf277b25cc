"""The versions of the workspace's files that the effects oracle's snapshots saw: what a tool read in an earlier run,
and what a later run (a resume) found when it started (history/stale.py judges from them)."""

from __future__ import annotations

from typing import Any

from .snapshot import Snapshot, under


def versions(effects: Any, before_run: int) -> tuple[dict[str, list[bytes]], dict[str, bytes]]:
    """The workspace's small files as the runs before run `before_run` saw them (every version, at each checkpoint),
    and as that run found them when it started."""
    seen: dict[str, list[bytes]] = {}
    runs = effects._runs
    for run in runs[: before_run - 1]:
        for checkpoint in run.checkpoints:
            for path, data in _files(effects, checkpoint.snap):
                if data not in seen.setdefault(path, []):
                    seen[path].append(data)
    start = dict(_files(effects, runs[before_run - 1].baseline)) if 0 < before_run <= len(runs) else {}
    return seen, start


def _files(effects: Any, snap: Snapshot) -> list[tuple[str, bytes]]:
    found = []
    for path, entry in snap.entries.items():
        if entry.kind == "file" and under(path, effects.workspace):
            data = effects.contents.read(entry.digest)
            if data is not None:
                found.append((path, data))
    return found
