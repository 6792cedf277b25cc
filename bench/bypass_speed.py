"""Bypass variants per second: through the real Claude Code CLI (several at once) and in-process.

    python bench/bypass_speed.py [cli|loop|both] [variants]

cli:  the curated `write .env` corpus against examples/claude_guard's hardened guard, each variant in
      its own world with its own gateway, run by 1..4 concurrent workers (threads; each drives one CLI).
loop: the same corpus against a LoopAgent (the reference loop on the anthropic SDK) whose tools are a
      Python Write and a guarded Bash: one worker, then two worker processes (as `pytest -n 2` runs).
      Every variant's verdict comes from the effects oracle on the real files, as in a test.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from pytest_controlplane import ClaudeAgent, LoopAgent, ModelGateway, World, text
from pytest_controlplane.bypass.corpus import corpus
from pytest_controlplane.session import AgentSession

REPO = Path(__file__).parent.parent
sys.path.insert(0, str(REPO / "examples" / "claude_guard"))
from guard import make_options  # noqa: E402

READ_ONLY = re.compile(r"(ls|cat|head|wc)( [\w./-]+)*")


def loop_options(workspace: Path) -> dict:
    def write(file_path: str, content: str = "") -> str:
        target = (workspace / file_path).resolve()
        if target.name == ".env" or workspace.resolve() not in target.parents:
            raise PermissionError(f"{file_path} is protected")
        target.write_text(content)
        return "ok"

    def bash(command: str) -> str:
        if not READ_ONLY.fullmatch(command):
            raise PermissionError("only read-only commands")
        return subprocess.run(command, shell=True, cwd=workspace, capture_output=True, text=True).stdout

    tools = [{"name": name, "description": name, "input_schema": {"type": "object"}} for name in ("Write", "Bash")]
    return {"system": "", "tools": tools, "tool_impls": {"Write": write, "Bash": bash}}


def worker(agent, variants, root: Path) -> list[str]:
    """One test's worth: one gateway, a fresh world per variant (as agent_session.isolated() gives)."""
    verdicts = []
    with ModelGateway(script=[text("unused")]) as gateway:
        for variant in variants:
            world = World.create(root / f"w{id(variant)}", f"bench::{variant.id}")
            (world.workspace / ".env").write_text("API_KEY=original\n")
            session = AgentSession(agent, world, gateway, timeout=60)
            verdicts.append(session.attempt(variant).verdict)
            gateway.observers.remove(session._request_arrived)
            gateway.exchanges.clear()
            shutil.rmtree(world.root, ignore_errors=True)
    return verdicts


def loop_worker(share: list) -> list[str]:
    return worker(LoopAgent(loop_options), share, Path(tempfile.mkdtemp()))


def measure(agent, variants, workers: int, processes: bool = False) -> tuple[float, dict]:
    root = Path(tempfile.mkdtemp())
    shares = [variants[i::workers] for i in range(workers)]
    start = time.perf_counter()
    if processes:
        with ProcessPoolExecutor(workers) as pool:
            verdicts = [v for share in pool.map(loop_worker, shares) for v in share]
    else:
        with ThreadPoolExecutor(workers) as pool:
            verdicts = [v for share in pool.map(lambda share: worker(agent, share, root), shares) for v in share]
    seconds = time.perf_counter() - start
    shutil.rmtree(root, ignore_errors=True)
    return len(variants) / seconds, {v: verdicts.count(v) for v in set(verdicts)}


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "both"
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    variants = corpus("write", ".env")
    if which in ("cli", "both"):
        chosen = variants[:limit or 24]
        for workers in (1, 2, 3, 4):
            rate, verdicts = measure(ClaudeAgent(make_options), chosen, workers)
            print(f"Claude CLI, {workers} at once: {rate:.2f} variants/s over {len(chosen)} ({verdicts})")
    if which in ("loop", "both"):
        chosen = (variants * 20)[:limit or 1000]
        measure(LoopAgent(loop_options), chosen[:20], 1)  # warm-up: imports, first client
        rate, verdicts = measure(LoopAgent(loop_options), chosen, 1)
        print(f"LoopAgent in-process, 1 worker: {rate:.0f} variants/s over {len(chosen)} ({verdicts})")
        rate, verdicts = measure(None, chosen, 2, processes=True)
        print(f"LoopAgent in-process, 2 worker processes: {rate:.0f} variants/s over {len(chosen)} ({verdicts})")


if __name__ == "__main__":
    main()
