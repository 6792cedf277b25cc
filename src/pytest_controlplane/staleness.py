"""A resumed session's staleness: did the last resumed run answer from what a tool read before the world changed
(history/stale.py judges; AgentSession inherits these)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from .crash import HistoryInconsistent
from .errors import ConfigError, ours

__tracebackhide__ = ours  # our errors show without our frames


class Staleness:
    """The stale-resume checks of an agent session."""

    runs: list[Any]
    gateway: Any
    effects: Any
    declared: Mapping[str, tuple[str, ...]] = MappingProxyType({})  # tool name -> its declared sources

    def declare_sources(self, **tools: str | Sequence[str]) -> None:
        """Say which workspace files a tool's results come from, besides those its processes read while it ran (which
        are known): `agent_session.declare_sources(get_order="orders.json")`, for a tool that answers from a copy
        it read earlier, or through a process of no agent's (a database server)."""
        given = {name: (paths,) if isinstance(paths, str) else tuple(paths) for name, paths in tools.items()}
        self.declared = {**self.declared, **given}

    def stale_problems(self) -> list[Any]:
        """The `stale-resume` problems of the last run that resumed a session (history/stale.py): carried tool results
        whose source changed since, answered from without reading it again or being told.  None without a resume."""
        from .canary.masking import redact
        from .effects.reads import version
        from .history.stale import Source, carried_results, prompt_of, stale_reads

        numbers = [number for number, run in enumerate(self.runs, start=1) if run.resumed]
        if not numbers:
            return []
        if self.effects.unwatched:
            raise ConfigError(
                f"Which files the agent's tools read is not known, so no resume can be judged stale or not: "
                f"{self.effects.unwatched}.",
                hint="Run on Linux, with inotify watches to spare (sysctl fs.inotify.max_user_instances and "
                "max_user_watches).",
            )
        number = numbers[-1]
        run = self.runs[number - 1]
        exchanges = [e for e in self.gateway.exchanges[run.first_exchange :] if e.request.route == "/v1/messages"]
        messages = (exchanges[0].request.json or {}).get("messages", []) if exchanges else []
        start, workspace = self.effects.at_start(number), self.effects.workspace
        # What each call read, the latest first: a carried call is the last one with its id and name before the
        # resumed run (a new scripted model numbers its calls afresh).
        earlier = [r for r in reversed(self.effects.reads) if r.run < number]

        def sources(reads: Any) -> set[str]:
            declared = {os.path.normpath(os.path.join(workspace, p)) for p in self.declared.get(reads.call.name, ())}
            return set(reads.paths) | declared

        def source(path: str, then: Any) -> Source:
            (old, before), (new, now) = version(then, path), version(start, path)
            return Source(path, old != new, before, now, gone=new is None)

        carried = []
        for read in carried_results(messages):
            found = next((r for r in earlier if (r.call.id, r.call.name) == (read.id, read.name)), None)
            if found is not None:
                carried.append((read, [source(path, found.snap) for path in sorted(sources(found))]))
        return stale_reads(
            carried,
            prompt=prompt_of(messages),
            reread=set().union(*(sources(r) for r in self.effects.reads if r.run == number)),
            workspace=workspace,
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
