"""What `controlplane audit DIR` runs after the audit: `--fix` (fix_run.py) and `--coverage` (ablation.py).  Each
plays the audit again on copies of DIR, a change made in each copy's settings, as `controlplane audit` would: its
files under OUT/fix/NAME or OUT/coverage/NAME, its output in NAME.log beside them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .command import AfterAudit, pytest_args
from .plan import EVERYDAY
from .records import Record, load


def run(after: AfterAudit, *, code: int) -> int:
    """`--fix` and `--coverage`, in that order, once the audit exited with `code`; exits as the audit did (the holes
    are DIR's until a patch is applied)."""
    if not (after.out / "audit.json").is_file():
        print(f"controlplane audit: the audit wrote no {after.out / 'audit.json'}: nothing to fix or remove",
              file=sys.stderr)  # fmt: skip
        return code
    if after.fix:
        fix(after)
    if after.coverage:
        coverage(after)
    return code


def fix(after: AfterAudit) -> None:
    """Propose, prove each change on a copy of DIR, report, write fix.patch."""
    from . import fix as fixes
    from . import fix_run

    records, meta = load(after.out / "audit.json")
    print("", flush=True)

    def play(changes: Sequence[Any], selection: Any, name: str) -> list[Record]:
        return _play(after, lambda copy: fixes.apply(copy, changes) if changes else None, selection.args(),
                     f"fix/{name}")  # fmt: skip

    proof = fix_run.prove(records, after.directory, play, say=lambda line: print(line, flush=True))
    print("\n".join(fix_run.lines(proof)))
    for path in fix_run.write(proof, after.directory, after.out, meta):
        print(f"written: {path}")
    if (after.out / "fix.patch").is_file() and proof.proven:
        patch = after.out / "fix.patch"
        print(f"apply it: git apply --directory=<DIR from the repository's root> {patch}  (or, in DIR: git apply "
              f"{patch})")  # fmt: skip


def coverage(after: AfterAudit) -> None:
    """The audit again without each hook and rule of DIR's settings in turn, and the cells that flip."""
    from . import ablation

    print("", flush=True)
    selection = after.selection + _targets(after)

    def play(entry: Any, name: str) -> list[Record]:
        return _play(after, lambda copy: ablation.remove(copy, entry) if entry else None, selection,
                     f"coverage/{name}", after.passed)  # fmt: skip

    _, removals = ablation.run(after.directory, play, say=lambda line: print(line, flush=True))
    print("\n".join(ablation.lines(removals)))
    for path in ablation.write(removals, after.out):
        print(f"written: {path}")


def _targets(after: AfterAudit) -> list[str]:
    """The targets the audit played, as --target options, when it chose them itself: a copy without a rule would
    imply others (a deny rule brings its target), and a removal is judged on the same items."""
    if "--target" in after.selection:
        return []
    records, _ = load(after.out / "audit.json")
    lines = dict.fromkeys(EVERYDAY if r.everyday else f"{r.family} {r.target}" for r in records)
    return [word for line in lines for word in ("--target", line)]


def _play(after: AfterAudit, edit: Callable[[Path], None], selection: list[str], name: str, passed: Sequence[str] = (),
          ) -> list[Record]:  # fmt: skip
    """Play `selection` (and `passed` to pytest) on a copy of the audited directory that `edit` changed; the records
    it wrote."""
    where = after.out / name
    where.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="controlplane-fix-") as tmp:
        copy = Path(tmp) / after.directory.name
        shutil.copytree(after.directory, copy, symlinks=True)
        edit(copy)
        argv = [str(copy), *selection, "--out", str(where), *after.kept, *(["--", *passed] if passed else [])]
        with open(where.with_suffix(".log"), "wb") as log:
            command = [sys.executable, "-m", "pytest", *pytest_args(argv, Path.cwd())]
            subprocess.call(command, stdout=log, stderr=subprocess.STDOUT)
    return load(where / "audit.json")[0] if (where / "audit.json").is_file() else []
