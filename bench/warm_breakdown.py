"""Where the time of one bypass variant goes, warm and cold: a PreToolUse hook guarding `.env`, the curated variants of
`write .env` on the plain form (one Bash or Write call each), played one after another in one process.

    python bench/warm_breakdown.py [N]

For each way, the mean per variant of: setting the world up (a cold world made, or the warm one put back), the agent
until its first model request (the CLI starting, or a new session of the running one), the model turns and tool calls
(first request to last answer: the gateway, the CLI, the tool, the hooks), the end of the run (the CLI exiting, or the
turn settling), and the effects oracle's snapshots inside all that.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

from pytest_controlplane import ClaudeAgent
from pytest_controlplane.agents.warm import close_pools, pool_for
from pytest_controlplane.bypass.corpus import corpus
from pytest_controlplane.effects import oracle
from pytest_controlplane.gateway import ModelGateway, ScriptedModel
from pytest_controlplane.session import AgentSession


def options(workspace: Path) -> ClaudeAgentOptions:
    async def guard(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if ".env" in str(data.get("tool_input")):
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                           "permissionDecisionReason": "no .env"}}
        return {}

    return ClaudeAgentOptions(permission_mode="bypassPermissions", setting_sources=[],
                              hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[guard])]})


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    variants = [v for v in corpus("write", ".env", forms=["relative"], exclude=["other-shell", "subagent", "poisoned"])
                if v.tool in ("Bash", "Write") and not v.requires][:count]  # fmt: skip
    snapping = [0.0]
    original = oracle.Effects._snap

    def timed(self: Any, run: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(self, run)
        finally:
            snapping[0] += time.perf_counter() - start

    oracle.Effects._snap = timed  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        for way in ("cold", "warm"):
            phases: dict[str, list[float]] = {k: [] for k in ("setup", "to first request", "turns", "end", "snapshots")}
            gateway = ModelGateway(mode="script", script=ScriptedModel([], then="done"))
            gateway.open()
            for number, variant in enumerate(variants):
                agent = ClaudeAgent(options)
                stamps: list[float] = []
                start = time.perf_counter()
                if way == "warm":
                    pool = pool_for(agent, None, base / "pools")
                    assert pool is not None
                    session = AgentSession.create_warm(agent, pool, f"bench::{number}", scratch=base)
                else:
                    session = AgentSession.create(agent, base / f"cold-{number}", f"bench::{number}", gateway=gateway)
                (session.workspace / ".env").write_text("API_KEY=original\n")
                session.gateway.observers.append(lambda request: stamps.append(time.perf_counter()))
                ready = time.perf_counter()
                snapping[0] = 0.0
                session.attempt(variant)
                done = time.perf_counter()
                last = session.gateway.exchanges[-1]
                answered = stamps[-1] + last.seconds
                phases["setup"].append(ready - start)
                phases["to first request"].append(stamps[0] - ready)
                phases["turns"].append(answered - stamps[0])
                phases["end"].append(done - answered)
                phases["snapshots"].append(snapping[0])
            gateway.close(save=False)
            total = sum(statistics.mean(v) for k, v in phases.items() if k != "snapshots")
            print(f"{way}: {total * 1000:.0f} ms per variant ({len(variants)} variants)")
            for name, values in phases.items():
                print(f"  {name:<18} {statistics.mean(values) * 1000:7.1f} ms")
        close_pools()


if __name__ == "__main__":
    main()
