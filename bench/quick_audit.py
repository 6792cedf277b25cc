"""How long `controlplane audit REPO --quick` takes, and whether its holes are among the full audit's.

    python bench/quick_audit.py [REPO ...] [--full]

REPO defaults to the two settings-guarded example repositories (examples/settings_hooks/project and
examples/node_hooks/project).  Each is audited with --quick at -n 2 (targets derived from the repository, one plain
spelling per route class, as the agent is configured), timed from the command's start to its exit.  With --full,
each is also audited with every spelling under the mode its settings configure (`defaultMode`, else default) -- the
column of the full audit that the quick one plays -- and the quick audit's holes (family, target, variant) are
checked to be among that audit's; this takes minutes per repository.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).parent.parent
REPOS = [ROOT / "examples" / "settings_hooks" / "project", ROOT / "examples" / "node_hooks" / "project"]


def audit(repo: Path, out: Path, *args: str) -> tuple[float, list[dict], str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest_controlplane.cli", "audit", str(repo), "-n", "2",
                           "--out", str(out), *args, "--", "-p", "no:randomly", "-p", "no:cacheprovider"],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    records = json.loads((out / "audit.json").read_text())["records"] if (out / "audit.json").is_file() else []
    return seconds, records, done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]


def holes(records: list[dict]) -> set[tuple[str, str, str]]:
    return {(r["family"], r["target"], r["variant"]) for r in records if r["cell"] == "bypassed"}


def configured_mode(repo: Path) -> str:
    settings = repo / ".claude" / "settings.json"
    data = json.loads(settings.read_text()) if settings.is_file() else {}
    return data.get("permissions", {}).get("defaultMode", "default")


def main() -> None:
    full = "--full" in sys.argv
    repos = [Path(a) for a in sys.argv[1:] if a != "--full"] or REPOS
    for repo in repos:
        with tempfile.TemporaryDirectory() as scratch:
            seconds, quick, totals = audit(repo, Path(scratch) / "quick", "--quick")
            print(f"{repo.relative_to(ROOT) if repo.is_relative_to(ROOT) else repo}: --quick {seconds:.1f} s, "
                  f"{len(quick)} records, {len(holes(quick))} holes ({totals})")
            if full:
                mode = configured_mode(repo)
                seconds, every, totals = audit(repo, Path(scratch) / "full", "--mode", mode)
                missing = holes(quick) - holes(every)
                print(f"  every spelling under {mode}: {seconds:.0f} s, {len(every)} records, "
                      f"{len(holes(every))} holes ({totals}); quick holes not among them: {sorted(missing) or 'none'}")


if __name__ == "__main__":
    main()
