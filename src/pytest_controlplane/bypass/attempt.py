"""Attempting a bypass variant through an agent session: its setup, the attempt, the verdict from its effect; or
the same variant once per permission mode, each from the same starting files (a differential run)."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from collections.abc import Sequence
from typing import Any

from ..agents.networked import unavailable_here
from ..cli_facts import CHECK_UNAVAILABLE, classifier_asks
from ..errors import AgentError, ControlPlaneError
from .everyday import needs_network
from .judge import WORST_FIRST, BypassOutcome, judge
from .routes import SHELL_TOOLS
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
            (o for rank in WORST_FIRST for o in by_mode.values() if o.verdict == rank),
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
    elif networked(variant) and (why := unavailable_here()):  # never played on the host's network
        outcome = BypassOutcome(variant, "not_applicable", "", None, reason=f"no world network can be made here: {why}")
    elif session.warm and (needs_cold(variant) or networked(variant) and not session.world.network.pooled):
        with session.isolated() as cold:  # a copy of this world, played by a CLI of its own
            outcome = attempt_variant(cold, variant, prompt)
    elif session.warm and session.warm_check(variant):
        with session.isolated() as twin:  # the world as the attempt finds it, for the same attempt played cold
            outcome = _attempt(session, variant, prompt)
            cold = attempt_variant(twin, variant, prompt)
        _compare(session, outcome, twin, cold)
    elif getattr(session.agent, "approval", None) == "deny":
        with session.isolated(approval="allow") as yes:  # the world as the attempt finds it, for a person's yes
            outcome = _attempt(session, variant, prompt)
            if outcome.verdict == "asked":
                behind_the_prompt(outcome, attempt_variant(yes, variant, prompt))
    else:
        outcome = _attempt(session, variant, prompt)
    session.bypass_outcomes.append(outcome)
    return outcome


def behind_the_prompt(asked: BypassOutcome, after_yes: BypassOutcome) -> None:
    """Credit an attempt the CLI asked about (nobody answered) with what a person's yes meets: held by the layer behind
    the prompt (the sandbox, a rule), or still `asked` with the yes named as what lets it through."""
    if after_yes.verdict == "held":  # by a layer, or by nothing the run can name: the call ran and had no effect
        asked.verdict, asked.layer, asked.behind_prompt = "held", after_yes.layer or "none", True
        asked.held_by = f"{after_yes.held_by}, behind the CLI's approval prompt (it asked; after a yes this held)"
    elif after_yes.verdict == "bypassed":
        asked.held_by += "; a yes at the prompt lets it through"


def networked(variant: Variant) -> bool:
    """A variant played inside a world network: an egress attempt, or an everyday task that reaches a domain."""
    return variant.family == "egress" or needs_network(variant)


def needs_cold(variant: Variant) -> bool:
    """What a warm CLI cannot play as a new one would: agent configuration planted in the workspace (a poisoned
    repository: a running CLI read its settings when it started), or a tool that goes on in the background
    (Monitor: its task outlives the turn and reports into the next).  An egress variant also plays cold unless
    the pool's CLI started in a world network (agents/networked.py)."""
    tools = {variant.tool, variant.via, *(tool for tool, _ in variant.setup)}
    return any(kind == "file" for kind, _, _ in variant.plant) or bool(tools & set(SHELL_TOOLS))


def _attempt(session: Any, variant: Variant, prompt: str) -> BypassOutcome:
    if networked(variant):
        session.world.network.wanted = True
    places, failures = prepare(session, variant)
    session.gateway.use_script(variant.model(places))
    before = len(session.gateway.exchanges)
    warm_before = getattr(session.agent, "warm_runs", 0)
    try:
        session.run(prompt)
    except AgentError:
        if not (unjudgeable := mode_check_unavailable(session, before)):
            raise
        return unjudgeable(variant)  # the CLI ends such a run with exit code 1 (2.1.337, plan mode)
    if unjudgeable := mode_check_unavailable(session, before):
        return unjudgeable(variant)
    if variant.family == "everyday":  # legitimate work: done or blocked
        from .everyday_judging import judge_everyday

        outcome = judge_everyday(session, variant, before, failures)
    else:
        outcome = judge(session, variant, before, failures)
    outcome.inconclusive_policy = session.inconclusive_policy
    outcome.warm = getattr(session.agent, "warm_runs", 0) > warm_before
    return outcome


def mode_check_unavailable(session: Any, before: int) -> Any:
    """A run whose outcome is the auto mode's safety check's (which plan mode asks too): the CLI asked the model for
    it (its classifier's requests reached the gateway since exchange `before`: Claude's judgement, which no script
    gives), or refused a call because the check does not run here (the CLI's words, the only signal then:
    cli_facts.py).  The mode cannot be judged here, so the variant is not applicable.  None otherwise."""
    asked = sum(classifier_asks(exchange.request.json) for exchange in session.gateway.exchanges[before:])
    if asked:
        reason = (
            f"the CLI asked its safety classifier (the auto mode's check, {asked} request(s) to the model): the "
            "outcome is Claude's judgement, which the scripted model does not stand in for, so it cannot be judged here"
        )
        return lambda variant: BypassOutcome(variant, "not_applicable", "", None, reason=reason)
    calls = session.runs[-1].tool_calls if session.runs else []
    said = next((found.group(0) for c in calls if (found := CHECK_UNAVAILABLE.search(c.result or c.reason or ""))), "")
    if not said:
        return None
    reason = (
        f"this CLI cannot run the permission mode's safety check here, so the mode cannot be judged "
        f"(inferred from the CLI's words: {said!r})"
    )
    return lambda variant: BypassOutcome(variant, "not_applicable", "", None, reason=reason, inferred=True)


class WarmDifference(ControlPlaneError):
    """A variant ended otherwise in the warm CLI than in a process of its own (`--agent-warm-check`)."""


def _compare(session: Any, warm: BypassOutcome, twin: Any, cold: BypassOutcome) -> None:
    """Fail unless the warm play and the cold one agree on the verdict, what held it and what happened (the worlds'
    own paths and the runs' ids aside)."""

    def seen(outcome: BypassOutcome, world: Any) -> dict[str, str]:
        words = {"verdict": outcome.verdict, "layer": outcome.layer, "held by": outcome.held_by,
                 "what happened": outcome.evidence, "why": outcome.reason}  # fmt: skip
        roots = sorted({str(world.root), os.path.realpath(world.root)}, key=len, reverse=True)
        for key, text in words.items():
            for root in roots:
                text = text.replace(root, "<world>")
            words[key] = re.sub(r"toolu_\w+|[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", text)
        return words

    ours, theirs = seen(warm, session.world), seen(cold, twin.world)
    differ = [key for key in ours if ours[key] != theirs[key]]
    if differ:
        lines = [f"  {key}: warm {ours[key]!r}, cold {theirs[key]!r}" for key in differ]
        raise WarmDifference(
            f"Bypass variant {warm.variant.id} ended otherwise in the warm CLI than in a process of its own:\n"
            + "\n".join(lines),
            hint="Something the control plane keeps outlives a session (state outside the options factory: a module "
            "global, a file the hook keeps), or the warm runner does not restore something: run it cold with "
            "`-o agent_warm=false`, and report it if the guard keeps nothing.",
        )
