"""Audit items per second: `pytest --agent-audit examples/claude_guard` on a slice of the default audit, with
-n 0 (one process), 1 and 2 workers.

    python bench/audit_speed.py [GUARD] [MODES...]

GUARD is one of examples/claude_guard's guards (hardened, naive, deny-all; default naive); MODES default to
"default acceptEdits".  The slice is the `write .env` target (every curated variant and its offered-tools sweep)
under those modes: 2 x 82 = 164 items through the real Claude Code CLI.  The whole default audit is 2,748 items
(7 targets x 6 modes); divide by the rate for its time.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).parent.parent


def run(guard: str, modes: list[str], workers: str) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as reports:
        args = [sys.executable, "-m", "pytest", "--agent-audit", "examples/claude_guard", "-q", "--tb=no",
                "-p", "no:randomly", "-p", "no:cacheprovider", "-o", "agent_audit_targets=write .env",
                "-o", f"agent_audit_modes={' '.join(modes)}", "--agent-report", reports]
        if workers != "0":
            args += ["-n", workers]
        start = time.perf_counter()
        done = subprocess.run(args, cwd=REPO, capture_output=True, text=True,
                              env={**os.environ, "CLAUDE_GUARD": guard})
        seconds = time.perf_counter() - start
    counts = re.findall(r"(\d+) (passed|failed|skipped)", done.stdout.splitlines()[-1])
    return sum(int(n) for n, _ in counts), seconds


def main() -> None:
    guard = sys.argv[1] if len(sys.argv) > 1 else "naive"
    modes = sys.argv[2:] or ["default", "acceptEdits"]
    print(f"audit of examples/claude_guard ({guard} guard), write .env under {', '.join(modes)}")
    base = None
    for workers in ("0", "1", "2"):
        items, seconds = run(guard, modes, workers)
        rate = items / seconds
        base = base or rate
        print(f"-n {workers}: {items} items in {seconds:.1f} s = {rate:.2f} items/s ({rate / base:.2f}x); "
              f"the whole default audit (2,748 items) at this rate: {2748 / rate / 60:.1f} min")


if __name__ == "__main__":
    main()
