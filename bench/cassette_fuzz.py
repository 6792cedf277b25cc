"""Mutated real cassettes, many of them: how many make an internal error (anything but CassetteCorrupt) when loaded,
checked, matched and read as replay and the readers of its answers do.

    python bench/cassette_fuzz.py [N] [--seed S] [--case I]    # default 20000 mutations, seed 1

Half the mutations edit a cassette file's text, half one recorded response (its decoded body edited, its stored bytes
damaged, its Content-Type or Content-Encoding changed); the mutations and the work done with each cassette are those
of tests/test_cassette_fuzz.py, over every cassette in the repository (ours and the foreign ones).  Case I is
reproducible alone with --case I: it is drawn from its own generator, seeded by S and I.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from pytest_controlplane.errors import CassetteCorrupt  # noqa: E402
from test_cassette_fuzz import (  # noqa: E402  (a test module: the mutations are the suite's own)
    exercise,
    load_and_exercise,
    mutated_cassette,
    mutated_file,
    real_cassettes,
)


def one(seed: int, case: int, directory: Path) -> str:
    """Mutation number `case`: "accepted", "refused", or raises what an internal error raises."""
    rng = random.Random(f"{seed}-{case}")

    def pick(n: int) -> int:
        return rng.randrange(n) if n > 0 else 0

    source = rng.choice(real_cassettes())
    if case % 2:
        return load_and_exercise(mutated_file(source, pick, directory))
    try:
        exercise(mutated_cassette(source, pick))
    except CassetteCorrupt:
        return "refused"
    return "accepted"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--case", type=int, help="run this case alone, with its traceback")
    args = parser.parse_args()
    cases = [args.case] if args.case is not None else range(args.n)
    outcomes: Counter[str] = Counter()
    errors: Counter[str] = Counter()  # by exception type and the line that raised it
    first: dict[str, int] = {}  # the first case of each
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory:
        for case in cases:
            try:
                outcomes[one(args.seed, case, Path(directory))] += 1
            except Exception as error:  # the internal errors this counts
                if args.case is not None:
                    raise
                where = traceback.extract_tb(error.__traceback__)[-1]
                key = f"{type(error).__name__} at {Path(where.filename).name}:{where.lineno}"
                errors[key] += 1
                first.setdefault(key, case)
    seconds = time.perf_counter() - started
    print(
        f"{len(real_cassettes())} cassettes; {sum(outcomes.values()) + sum(errors.values())} mutations in "
        f"{seconds:.0f} s: {outcomes['accepted']} accepted, {outcomes['refused']} refused (CassetteCorrupt)"
    )
    for key, count in errors.most_common():
        print(f"  {count} x {key} (first: --case {first[key]})")
    print(f"{len(cases)} mutations tried, {sum(errors.values())} internal errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
