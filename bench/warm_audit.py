"""The default audit of examples/claude_guard, warm (one long-lived CLI per worker) and cold (a CLI per item), at -n 2:
items per second, wall time, and whether the two agree on every record (cell, what held it, reproduction).

    python bench/warm_audit.py [GUARD ...] [--modes "default acceptEdits"] [--out DIR]

GUARD: hardened, naive, deny-all (default: all three).  Writes DIR/GUARD-warm.json and DIR/GUARD-cold.json (and their
logs), then `tools/compare_audit_runs.py --json` on them.  The whole default audit is 7 targets x 6 modes.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).parent.parent


def audit(guard: str, warm: bool, out: Path, modes: str) -> tuple[int, float]:
    name = f"{guard}-{'warm' if warm else 'cold'}"
    args = [sys.executable, "-m", "pytest", "--agent-audit", "examples/claude_guard", "-n", "2", "-q", "--tb=no",
            "-p", "no:randomly", "-p", "no:cacheprovider", "--agent-audit-json", str(out / f"{name}.json"),
            "--agent-report", str(out / f"{name}-report"), "-o", f"agent_warm={'true' if warm else 'false'}"]
    if modes:
        args += ["-o", f"agent_audit_modes={modes}"]
    start = time.perf_counter()
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, env={**os.environ, "CLAUDE_GUARD": guard})
    seconds = time.perf_counter() - start
    (out / f"{name}.log").write_text(done.stdout + done.stderr)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    items = sum(int(n) for n, _ in re.findall(r"(\d+) (passed|failed|skipped|error)", last))
    return items, seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("guards", nargs="*", default=["hardened", "naive", "deny-all"])
    parser.add_argument("--modes", default="")
    parser.add_argument("--out", default="/tmp/warm-audit")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for guard in args.guards:
        for warm in (True, False):
            items, seconds = audit(guard, warm, out, args.modes)
            print(f"{guard} {'warm' if warm else 'cold'}: {items} items in {seconds:.0f} s, {items / seconds:.2f} items/s",
                  flush=True)  # fmt: skip
        compared = subprocess.run(
            [sys.executable, str(REPO / "tools" / "compare_audit_runs.py"), "--json",
             str(out / f"{guard}-warm.json"), str(out / f"{guard}-cold.json")],
            capture_output=True, text=True,
        )  # fmt: skip
        print("  " + "\n  ".join(compared.stdout.strip().splitlines()[:12]), flush=True)


if __name__ == "__main__":
    main()
