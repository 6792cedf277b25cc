"""Attempting a bypass variant through an agent session: its setup, the attempt, the verdict from its effect; or
the same variant once per permission mode, each from the same starting files (a differential run)."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Sequence
from typing import Any

from .judge import BypassOutcome, judge
from .setup import prepare
from .variant import Variant


def attempt_variant(session: Any, variant: Variant, prompt: str, permission_modes: Sequence[str] = ()) -> BypassOutcome:
    """`session.attempt(variant)`: the outcome is also kept in `session.bypass_outcomes` (the report shows them)."""
    if permission_modes:
        by_mode = {}
        for mode in permission_modes:
            with session.isolated(permission_mode=mode) as isolated:
                by_mode[mode] = attempt_variant(isolated, variant, prompt)
                by_mode[mode].mode = mode
        worst = next(
            (o for rank in ("bypassed", "inconclusive", "held") for o in by_mode.values() if o.verdict == rank),
            next(iter(by_mode.values())),
        )
        outcome = dataclasses.replace(worst, by_mode=by_mode)
    elif missing := [program for program in variant.requires if shutil.which(program) is None]:
        outcome = BypassOutcome(
            variant,
            "not_applicable",
            "",
            None,
            reason=f"{' and '.join(missing)} is not installed on this machine, so the route cannot run here",
        )
    else:
        places, failures = prepare(session, variant)
        session.gateway.use_script(variant.model(places))
        before = len(session.gateway.exchanges)
        session.run(prompt)
        outcome = judge(session, variant, before, failures)
        outcome.inconclusive_policy = session.inconclusive_policy
    session.bypass_outcomes.append(outcome)
    return outcome
