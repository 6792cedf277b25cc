"""Mutation testing of the oracles on a seeded random sample of their mutants (`make mutate-sample`).

Every mutant of the oracle modules takes 12 hours or more on 2 cores (`make mutate`); a simple random sample gives
the kill rate, with its 95 % interval, in an hour or two.  The same seed and size pick the same mutants from the same
code, so a figure can be checked by running its command again.

    python tools/mutation_sample.py --size 400 --seed 1     # generate, sample, run, report
    python tools/mutation_sample.py --size 400 --seed 1 --report-only   # report what mutmut recorded
"""
from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

KILLED = {1: "killed", 3: "killed", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout", 36: "timeout"}
SURVIVED = {0: "survived", 5: "no tests", 33: "no tests"}


def generate() -> None:
    """Write mutants/ (what `mutmut run` does before it runs anything) without running a test."""
    from mutmut.__main__ import create_mutants, store_lines_covered_by_tests
    from mutmut.mutation.trampoline import set_mutant_under_test
    from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths

    set_mutant_under_test("mutant_generation")
    Path("mutants").mkdir(exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    store_lines_covered_by_tests()
    create_mutants(2)


def recorded() -> dict[str, int | None]:
    """Every mutant's exit code as mutmut recorded it (None: not run yet)."""
    codes: dict[str, int | None] = {}
    for meta in sorted(Path("mutants").rglob("*.py.meta")):
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    return codes


def sample(names: list[str], size: int, seed: int) -> list[str]:
    return sorted(random.Random(seed).sample(sorted(names), min(size, len(names))))


def wilson(killed: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion (sound near 100 %, unlike the normal one)."""
    p = killed / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return centre - half, centre + half


def report(picked: list[str], codes: dict[str, int | None], population: int) -> int:
    outcome = {name: KILLED.get(codes[name]) or SURVIVED.get(codes[name]) or f"exit {codes[name]}" for name in picked}
    by_module = Counter(name.split(".x")[0] for name in picked)
    done = [n for n in picked if codes[n] is not None]
    killed = sum(n in done and codes[n] in KILLED for n in picked)
    print(f"sample: {len(picked)} of {population} mutants; with a result: {len(done)}")
    for module, count in sorted(by_module.items()):
        mine = [n for n in picked if n.startswith(module + ".")]
        print(f"  {module}: {sum(codes[n] in KILLED for n in mine)} killed of {count}")
    if not done:
        return 1
    low, high = wilson(killed, len(done))
    print(f"kill rate: {killed}/{len(done)} = {killed / len(done):.1%} (95 % interval {low:.1%} to {high:.1%})")
    for name in picked:
        if codes[name] is not None and codes[name] not in KILLED:
            print(f"  {outcome[name]}: {name}")
    return 0 if len(done) == len(picked) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    if not args.report_only:
        generate()
    picked = sample(list(recorded()), args.size, args.seed)
    if not args.report_only:
        mutmut = Path(sys.executable).with_name("mutmut")
        subprocess.run([str(mutmut), "run", "--max-children", str(args.max_children), *picked], check=False)
    return report(picked, recorded(), len(recorded()))


if __name__ == "__main__":
    sys.exit(main())
