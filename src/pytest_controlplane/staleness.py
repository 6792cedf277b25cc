"""A resumed session's staleness: did the last resumed run answer from what a tool read before the world changed
(history/stale.py judges; AgentSession inherits these)."""

from __future__ import annotations

from typing import Any

from .crash import HistoryInconsistent
from .errors import ours

__tracebackhide__ = ours  # our errors show without our frames


class Staleness:
    """The stale-resume checks of an agent session."""

    runs: list[Any]
    gateway: Any
    effects: Any

    def stale_problems(self) -> list[Any]:
        """The `stale-resume` problems of the last run that resumed a session (history/stale.py): carried tool results
        whose file changed since, answered from without reading it again or being told.  None without a resume."""
        from .canary.masking import redact
        from .effects.versions import versions
        from .history.stale import carried_results, prompt_of, stale_reads

        numbers = [number for number, run in enumerate(self.runs, start=1) if run.resumed]
        if not numbers:
            return []
        run = self.runs[numbers[-1] - 1]
        exchanges = [e for e in self.gateway.exchanges[run.first_exchange :] if e.request.route == "/v1/messages"]
        messages = (exchanges[0].request.json or {}).get("messages", []) if exchanges else []
        then, now = versions(self.effects, numbers[-1])
        return stale_reads(
            carried_results(messages),
            prompt=prompt_of(messages),
            after=[(call.name, call.input) for call in run.tool_calls],
            workspace=self.effects.workspace,
            now=now.get,
            then=then,
            mask=lambda text: redact(text, self.effects.secrets),
        )

    def assert_not_stale(self) -> None:
        """Fail if the last resumed run answered from a tool result the world has changed since (stale_problems)."""
        __tracebackhide__ = True
        problems = self.stale_problems()
        if problems:
            raise HistoryInconsistent(
                "The resumed session answered from what it read before the world changed:\n"
                + "\n".join(f"  {p}" for p in problems)
            )
