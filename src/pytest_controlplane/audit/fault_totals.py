"""The faults axis in numbers: of the attacks the configuration holds, how many get through once a hook fails.

A faulted attempt counts when the same attack, in the same column without the fault, was stopped: then `bypassed`
is fail-open (the hook's failure let it through) and anything stopped fails closed.  An attack already through
without the fault says nothing about the fault, and is left out."""

from __future__ import annotations

from collections.abc import Iterable

from ..agents.hook_faults import Fault
from .plan import split_column
from .records import STOPPED, Record


def lines(records: Iterable[Record]) -> list[str]:
    """`faults: 8 of 12 attacks the configuration stops get through once a hook fails (fail-open), 4 fail closed`,
    then one line per fault; [] without the faults axis."""
    records = list(records)
    plain = {(r.family, r.target, r.variant, r.mode, r.cli): r.cell for r in records if not split_column(r.mode)[2]}
    counted: dict[str, list[bool]] = {}
    for r in records:
        mode, level, fault = split_column(r.mode)
        base = plain.get((r.family, r.target, r.variant, mode + (f"@{level}" if level else ""), r.cli))
        if fault and not r.everyday and base in STOPPED and r.cell in (*STOPPED, "bypassed"):
            counted.setdefault(fault, []).append(r.cell == "bypassed")
    if not counted:
        return []
    opened = sum(sum(v) for v in counted.values())
    total = sum(len(v) for v in counted.values())
    found = [f"faults: {opened} of {total} attacks the configuration stops get through once a hook fails "
             f"(fail-open); {total - opened} fail closed"]  # fmt: skip
    for fault, through in sorted(counted.items(), key=lambda item: (-sum(item[1]), item[0])):
        verdict = "fail-open" if all(through) else "fails closed" if not any(through) else "partly fail-open"
        found.append(f"  {Fault.parse(fault).words}: {sum(through)} of {len(through)} through ({verdict})")
    return found
