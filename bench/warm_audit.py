"""The default audit of examples/claude_guard, warm (one long-lived CLI per worker) and cold (a CLI per item), at -n 2:
items per second, wall time, and whether the two agree on every record (cell, what held it, reproduction).

    python bench/warm_audit.py [GUARD ...] [--modes "default acceptEdits"] [--out DIR] [--regression]

GUARD: hardened, naive, deny-all (default: all three).  Writes DIR/GUARD-warm.json and DIR/GUARD-cold.json (and their
logs), then `tools/compare_audit_runs.py --json` on them.  The whole default audit is 7 targets x 6 modes.
--regression: the warm audit also writes its regression module; it is then run warm and cold at -n 2 (in
examples/claude_guard, where its conftest defines the agent; removed after), and the two runs compared test by test.
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
sys.path.insert(0, str(REPO / "tools"))
from compare_audit_runs import statuses  # noqa: E402  (test name -> failed / skipped / error / passed)


def audit(guard: str, warm: bool, out: Path, modes: str, module: Path | None = None) -> tuple[int, float]:
    name = f"{guard}-{'warm' if warm else 'cold'}"
    args = [sys.executable, "-m", "pytest", "--agent-audit", "examples/claude_guard", "-n", "2", "-q", "--tb=no",
            "-p", "no:randomly", "-p", "no:cacheprovider", "--agent-audit-json", str(out / f"{name}.json"),
            "--agent-report", str(out / f"{name}-report"), "-o", f"agent_warm={'true' if warm else 'false'}"]
    if modes:
        args += ["-o", f"agent_audit_modes={modes}"]
    if module:
        args += ["--agent-audit-write", str(module)]
    return timed(args, guard, out / f"{name}.log")


def timed(args: list[str], guard: str, log: Path) -> tuple[int, float]:
    """Run pytest with `args` against `guard`: the items it ran and the wall time."""
    start = time.perf_counter()
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, env={**os.environ, "CLAUDE_GUARD": guard})
    seconds = time.perf_counter() - start
    log.write_text(done.stdout + done.stderr)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    items = sum(int(n) for n, _ in re.findall(r"(\d+) (passed|failed|skipped|error)", last))
    return items, seconds


def regression(guard: str, module: Path, out: Path) -> None:
    """The written module, warm and cold at -n 2, compared test by test (how each ended)."""
    ended = {}
    for warm in (True, False):
        name = f"{guard}-module-{'warm' if warm else 'cold'}"
        args = [sys.executable, "-m", "pytest", str(module), "-n", "2", "-q", "--tb=no", "-p", "no:randomly",
                "-p", "no:cacheprovider", "--junitxml", str(out / f"{name}.xml"),
                "-o", f"agent_warm={'true' if warm else 'false'}"]  # fmt: skip
        items, seconds = timed(args, guard, out / f"{name}.log")
        print(f"{guard} module {'warm' if warm else 'cold'}: {items} tests in {seconds:.0f} s, "
              f"{items / seconds:.2f} tests/s", flush=True)  # fmt: skip
        ended[warm] = statuses(out / f"{name}.xml")
    differ = sorted(n for n in set(ended[True]) | set(ended[False]) if ended[True].get(n) != ended[False].get(n))
    alike = len(ended[True]) - len(differ)
    print(f"  {alike} of {len(ended[True])} tests ended alike; {len(differ)} differ", flush=True)
    for name in differ[:20]:
        print(f"    {name}: warm {ended[True].get(name)}, cold {ended[False].get(name)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("guards", nargs="*", default=["hardened", "naive", "deny-all"])
    parser.add_argument("--modes", default="")
    parser.add_argument("--out", default="/tmp/warm-audit")
    parser.add_argument("--regression", action="store_true", help="also run the written module warm and cold")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for guard in args.guards:
        module = REPO / "examples" / "claude_guard" / f"test_bench_{guard.replace('-', '_')}_holes.py"
        for warm in (True, False):
            items, seconds = audit(guard, warm, out, args.modes, module if warm and args.regression else None)
            way = "warm" if warm else "cold"
            print(f"{guard} {way}: {items} items in {seconds:.0f} s, {items / seconds:.2f} items/s", flush=True)
        compared = subprocess.run(
            [sys.executable, str(REPO / "tools" / "compare_audit_runs.py"), "--json",
             str(out / f"{guard}-warm.json"), str(out / f"{guard}-cold.json")],
            capture_output=True, text=True,
        )  # fmt: skip
        print("  " + "\n  ".join(compared.stdout.strip().splitlines()[:12]), flush=True)
        if args.regression:
            try:
                regression(guard, module, out)
            finally:
                module.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
