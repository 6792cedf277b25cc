"""Agent processes: how they ended, and making sure none outlives its run.

Every process an agent starts inherits `WORLD_ENV` (set by `World.env`), so whatever the agent left
running — a detached `nohup`, a background shell, a CLI that ignored its parent's exit — can be
found through /proc and killed, even when it left the process group.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Set as AbstractSet
from pathlib import Path

WORLD_ENV = "CONTROLPLANE_WORLD"
TAIL_LINES = 15


def describe_exit(returncode: int) -> str:
    """ "exited with code 3" or "was killed by SIGKILL" (a negative return code is a signal)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


def stderr_tail(lines: list[str], count: int = TAIL_LINES) -> str:
    kept = [line.rstrip("\n") for line in lines if line.strip()][-count:]
    return "\n".join(f"  | {line}" for line in kept) if kept else "  (the agent wrote nothing to stderr)"


def process_ids() -> set[int]:
    """The pids alive now (empty where there is no /proc)."""
    try:
        return {int(name) for name in os.listdir("/proc") if name.isdigit()}
    except OSError:
        return set()


def processes_of(world_root: Path | str, *, besides: AbstractSet[int] = frozenset()) -> list[tuple[int, str]]:
    """Live processes (pid, command line) whose environment marks them as this world's.

    `besides`: pids that were alive before the world's run began, so cannot be its children.
    """
    marker = f"{WORLD_ENV}={world_root}".encode()
    found = []
    for pid in process_ids() - besides - {os.getpid()}:
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if marker not in environ.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if command:  # an empty command line is a zombie: already dead
            found.append((pid, command))
    return found


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rpartition(b")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def detached(world_root: Path | str, marker: str) -> list[str]:
    """The processes of this world outside the agent's own process tree: the tree is everything under the topmost
    ancestor of a process whose command line holds `marker` (the hook recorder, under the CLI that started it).
    Its tool shells, background tasks and MCP servers are in it; what left it — a `nohup`, a double fork, a `setsid`
    — is not, and could write while a hook runs ("pid command" each)."""
    alive = dict(processes_of(world_root))
    parents: dict[int, int] = {}

    def chain(pid: int) -> list[int]:
        """`pid` and its ancestors, through any process (a zombie or a shell between two of the world's too)."""
        found: list[int] = []
        while pid > 1 and pid not in found and len(found) < 64:
            found.append(pid)
            pid = parents.setdefault(pid, _parent(pid))
        return found

    def top(pid: int) -> int:
        ours = [p for p in chain(pid) if p in alive]
        return ours[-1] if ours else pid

    roots = {top(pid) for pid, command in alive.items() if marker in command}
    return [
        f"{pid} {command[:120]}"
        for pid, command in alive.items()
        if roots and not roots & set(chain(pid)) and parents.get(pid)  # no parent to read: gone meanwhile
    ]


def reap(world_root: Path | str, *, besides: AbstractSet[int] = frozenset()) -> list[str]:
    """Kill every process still running in this world; return what was killed, as "pid command"."""
    killed = []
    for pid, command in processes_of(world_root, besides=besides):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        killed.append(f"{pid} {command[:200]}")
    _wait_dead([int(k.split(" ", 1)[0]) for k in killed])
    return killed


def _wait_dead(pids: list[int], timeout: float = 5.0) -> None:
    """Until every pid is gone or a zombie: SIGKILL is delivered asynchronously, and whoever looks next (the
    next run, a test's witness) must not find them still running."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{pid}/stat", "rb") as stat:
                    if stat.read().rpartition(b")")[2].split()[0] in (b"Z", b"X"):
                        break
            except OSError:  # gone
                break
            time.sleep(0.002)


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid` (started with start_new_session=True)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
