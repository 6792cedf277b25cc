"""Where the time of one bypass variant goes, warm and cold: a PreToolUse hook guarding `.env`, the curated variants of
`write .env` on the plain form (one Bash or Write call each), played one after another in one process.

    python bench/warm_breakdown.py [N]    (means over the variants after the first: the warm CLI started then)

For each way, the mean per variant of: setting the world up (a cold world made, or the warm one put back), the agent
until its first model request (the CLI starting, or a new session of the running one), the model turns and tool calls
(first request to last answer: the gateway, the CLI, the tool, the hooks), the end of the run (the CLI exiting, or the
turn settling), and inside all that the effects oracle's snapshots, the gateway answering, and the guard hook.
Then the CPU of one variant: the CLI's (with the shells its tools ran) and this process's (the gateway, the hook
callbacks, the oracles, the restore).  On 2 cores, the CLI's CPU alone bounds how many variants a second can run.
"""

from __future__ import annotations

import os
import resource
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

HOOKS = [0.0]  # seconds in the guard hook, this variant


def options(workspace: Path) -> ClaudeAgentOptions:
    async def guard(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            if ".env" in str(data.get("tool_input")):
                return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                               "permissionDecisionReason": "no .env"}}
            return {}
        finally:
            HOOKS[0] += time.perf_counter() - start

    return ClaudeAgentOptions(permission_mode="bypassPermissions", setting_sources=[],
                              hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[guard])]})


def cli_seconds(pids: list[int]) -> float:
    """CPU seconds of the running CLIs `pids` and of the children they waited for (the tools' shells)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the CLIs that ran and exited (cold)
    return usage.ru_utime + usage.ru_stime


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
            names = ("setup", "to first request", "turns", "end", "snapshots", "gateway", "guard hook", "CLI CPU",
                     "our CPU")  # fmt: skip
            phases: dict[str, list[float]] = {k: [] for k in names}
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
                def arrived(request: Any, stamps: list[float] = stamps) -> None:
                    stamps.append(time.perf_counter())

                session.gateway.observers.append(arrived)
                before = len(session.gateway.exchanges)
                pids = [session.agent.pool.client._transport._process.pid] if way == "warm" else []
                ready = time.perf_counter()
                snapping[0] = HOOKS[0] = 0.0
                cpu = (cli_seconds(pids) + children_seconds(), time.process_time())
                session.attempt(variant)
                done = time.perf_counter()
                phases["CLI CPU"].append(cli_seconds(pids) + children_seconds() - cpu[0])
                phases["our CPU"].append(time.process_time() - cpu[1])
                session.gateway.observers.remove(arrived)  # the cold runs share one gateway
                phases["gateway"].append(sum(e.seconds for e in session.gateway.exchanges[before:]))
                phases["guard hook"].append(HOOKS[0])
                last = session.gateway.exchanges[-1]
                answered = stamps[-1] + last.seconds
                phases["setup"].append(ready - start)
                phases["to first request"].append(stamps[0] - ready)
                phases["turns"].append(answered - stamps[0])
                phases["end"].append(done - answered)
                phases["snapshots"].append(snapping[0])
            gateway.close(save=False)
            total = sum(statistics.mean(phases[k][1:]) for k in ("setup", "to first request", "turns", "end"))
            print(f"{way}: {total * 1000:.0f} ms per variant ({len(variants)} variants)")
            for name, values in phases.items():
                inside = "   (inside the above)" if name in ("snapshots", "gateway", "guard hook") else ""
                print(f"  {name:<18} {statistics.mean(values[1:] or values) * 1000:7.1f} ms{inside}")
            cli = statistics.mean(phases["CLI CPU"][1:])
            print(f"  2 cores: at most {2 / cli:.1f} variants/s from the CLI's CPU alone")
        close_pools()


if __name__ == "__main__":
    main()
