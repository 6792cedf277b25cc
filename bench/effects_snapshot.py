"""Snapshot and diff speed of the effects oracle on a large workspace.

    python bench/effects_snapshot.py [files]      # default 10000

Builds a workspace of `files` source-sized files (200 B - 8 KB, 100 per directory, a few
64 KB+ files among them) and times: the first snapshot (every file hashed), a second one (the
stat-signature cache: nothing re-read), a snapshot after 10 files changed (only those re-read),
the diff, and `assert_not_written` over it.  Medians of 5 rounds.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_controlplane.effects import Contents, Effects, snapshot


def build(root: Path, files: int) -> list[Path]:
    rng = random.Random(7)
    paths = []
    for i in range(files):
        directory = root / f"pkg{i // 100:03d}"
        directory.mkdir(exist_ok=True)
        path = directory / f"module{i % 100:02d}.py"
        size = 100_000 if i % 1000 == 0 else rng.randint(200, 8000)
        path.write_bytes(rng.randbytes(size // 2).hex().encode()[:size])
        paths.append(path)
    return paths


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return time.perf_counter() - start, value


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "workspace"
        root.mkdir()
        paths = build(root, files)
        time.sleep(0.1)  # out of the racy window, as a workspace seeded before a run is
        cold, warm, changed, diffing, asserting = [], [], [], [], []
        for round_ in range(5):
            os.sync()
            contents = Contents()
            seconds, first = timed(snapshot, root, contents=contents)
            cold.append(seconds)
            seconds, _ = timed(snapshot, root, contents=contents)
            warm.append(seconds)
            for path in paths[round_ * 10:(round_ + 1) * 10]:
                path.write_text(f"changed in round {round_}")
            before_hashed = contents.hashed
            seconds, second = timed(snapshot, root, contents=contents)
            changed.append(seconds)
            rehashed = contents.hashed - before_hashed
            seconds, changes = timed(first.changes_to, second)
            diffing.append(seconds)
        effects = Effects(root)
        with effects.observe():
            paths[-1].write_text("the agent was here")
        seconds, _ = timed(effects.violations, paths[0])
        asserting.append(seconds)

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:7.1f} ms"

    print(f"workspace: {files} files in {files // 100} directories")
    print(f"first snapshot (hash everything): {ms(cold)}")
    print(f"second snapshot (cache hits):     {ms(warm)}")
    print(f"after 10 files changed:           {ms(changed)}  ({rehashed} files re-read)")
    print(f"diff of two snapshots:            {ms(diffing)}  ({len(changes)} changes)")
    print(f"assert_not_written (aliases):     {ms(asserting)}")


if __name__ == "__main__":
    main()
