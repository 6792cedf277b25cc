"""What a report shows, gathered from an AgentSession into plain data (it crosses xdist workers as JSON)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ControlPlaneError


def collect(
    session: Any, *, test: str, outcome: str, failure: str = "", mode: str = "", canaries: Sequence[Any] = ()
) -> dict[str, Any]:
    """Everything the HTML report of one test needs; `canaries` are the test's Canary objects.  The tool calls, effects
    and hook runs are this world's and those of its isolated worlds (a variant played per mode, or cold), each said."""
    worlds = session.worlds()
    data: dict[str, Any] = {
        "test": test,
        "outcome": outcome,
        "failure": failure,
        "agent": type(session.agent).__name__,
        "cli": next((run.cli.describe() for run in session.runs if run.cli), ""),
        "mode": "script" if session.gateway.mode == "script" else mode,
        "exchanges": [_exchange(exchange) for exchange in session.gateway.exchanges],
        "tool_calls": [_tool_call(c, where) for where, calls, *_ in worlds for c in calls],
        "effects": [_change(c, where) for where, _, diff, *_ in worlds for c in diff],
        "hook_effects": [_change(c, where) for where, _, _, by_hooks, *_ in worlds for c in by_hooks],
        "egress": [{"where": where, "what": s.describe().strip()} for where, *_, sent in worlds for s in sent],
        "bookkeeping": len(session.effects.bookkeeping),
        "canaries": [{"name": c.name, "value": c.value, "secret": c.secret} for c in canaries],
        "masked": list(session.effects.secrets),  # the secret files' values too: rendered masked, never written
        "hook_runs": [_hook_run(r) for *_, runs, _ in worlds for r in runs],
        "variants": [_outcome(o) for o in getattr(session, "bypass_outcomes", [])],
        "offered": _offered(session),
        "crashes": [str(report) for report in getattr(session, "crash_reports", [])],
    }
    if canaries:
        from ..canary.canary import find_all

        data["leaks"] = [
            {"where": leak.where, "canary": leak.canary, "encoding": leak.encoding, "snippet": leak.snippet}
            for leak in find_all(list(canaries), session)
        ]
    if session.runs:
        try:
            data["history_problems"] = [str(p) for p in session.history_problems()]
        except (ControlPlaneError, OSError, ValueError):
            pass
    return data


def _exchange(exchange: Any) -> dict[str, Any]:
    """A request and its answer: the assembled message, or the body as it came (an error, a page)."""
    answer = exchange.answer
    if answer is None:
        raw = exchange.body
        answer = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return {"request": exchange.request.json, "response": answer, "status": exchange.status, "source": exchange.source}


def _tool_call(call: Any, where: str = "") -> dict[str, Any]:
    keys = (
        "name",
        "input",
        "verdict",
        "reason",
        "result",
        "consulted",
        "ran_input",
        "layer",
        "decided_by",
        "sandbox_note",
        "asked_for",
        "inferred",
    )
    return {**{key: getattr(call, key) for key in keys}, "where": where}


def _change(change: Any, where: str) -> dict[str, Any]:
    during = f"{change.during} ({where})" if where else change.during
    return {"run": change.run, "during": during, "path": change.shown_as, "kind": change.kind, "detail": change.detail}


def _hook_run(run: Any) -> dict[str, Any]:
    return {
        "hook": run.hook.label,
        "tool": run.input.get("tool_name", ""),
        "decision": run.decision,
        "reason": run.reason,
        "exit_code": run.exit_code,
        "seconds": round(run.seconds, 3),
    }


def _offered(session: Any) -> list[dict[str, Any]]:
    """The tools the agent offered, classified (bypass tests only: that is where routes are judged)."""
    if not getattr(session, "bypass_outcomes", None):
        return []
    from ..bypass.offered import offered_in

    return [
        {"name": t.name, "class": t.tool_class, "deferred": t.deferred, "why": t.why}
        for t in offered_in(session.gateway.exchanges)
    ]


def summary(session: Any, *, mode: str) -> dict[str, Any]:
    """The numbers of one agent test for the terminal summary (small: it travels in the test report)."""
    from ..gateway.backends import NORMALISED_MATCH
    from ..gateway.releases import ACROSS_RELEASES
    from ..wire import token_counts

    requests = [e for e in session.gateway.exchanges if e.request.route == "/v1/messages"]
    tokens_in = tokens_out = 0
    for exchange in requests:
        counts = token_counts((exchange.answer or {}).get("usage") or {})
        tokens_in += counts[0]
        tokens_out += counts[1]
    sources = [e.source for e in requests]
    across = [note for e in requests for note in e.notes if note.startswith(ACROSS_RELEASES)]
    return {
        "mode": session.gateway.mode if session.gateway.mode == "script" else mode,
        "turns": len(requests),
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "hits": sources.count("cassette"),
        "recorded": sources.count("upstream"),
        "misses": sum(1 for e in requests if "ReplayMiss" in e.notes),
        "normalised": sum(1 for e in requests if NORMALISED_MATCH in e.notes),
        "across": len(across),
        "releases": "; ".join(sorted({note.removeprefix(ACROSS_RELEASES).strip(" ()") for note in across})),
        "missing": int(any("CassetteNotFound" in e.notes for e in requests)),
        "unused": session.gateway.unplayed(),
    }


def _outcome(outcome: Any) -> dict[str, Any]:
    variant = outcome.variant
    return {
        "id": variant.id,
        "route": variant.route,
        "form": variant.form,
        "reference": variant.reference,
        "reproduction": variant.reproduction(),
        "verdict": outcome.verdict,
        "evidence": outcome.evidence,
        "consulted": {True: "yes", False: "no (fail-open?)", None: "cannot tell"}[outcome.consulted],
        "held_by": outcome.held_by,
        "why": outcome.reason,
        "planted": outcome.planted,
        "callback_consulted": outcome.call.permissions_consulted if outcome.call else 0,
        "warm": outcome.warm,
    }
