"""What an agent session needs of an agent: `ClaudeAgent`, `CommandAgent` and `LoopAgent` implement it, and so may
a user's own adapter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from .outcome import RunOutcome


@runtime_checkable
class AgentAdapter(Protocol):
    """`run(prompt, *, world, base_url, session_id, resume=None, fork=False, timeout, **hooks) -> RunOutcome` runs
    the agent once against the gateway at `base_url`, in `world`; the hooks are what the adapter declares it takes
    (`checkpoint` for an agent whose tool calls it observes, `save_hook` for one whose saves a crash test may cut,
    `crash` for an in-process one).  `transcript(world, session_id) -> Path` and `history(world, session_id)` find and
    read what a session stored (needed by `agent_session.history`, `transcript_path()` and crash tests).

    Optional attributes say how the session drives it (each defaults to the first value): `timeout` (None, or
    seconds per run), `observes_control_plane` (True; False: its tool calls are read off the model's exchanges),
    `save_points` (False; True: its saves can be crashed mid-write), `in_process` (False; True: a crash stops it with
    SimulatedCrash, not a signal), `stored(world, session_id)` (its own store's reader) and `with_permission_mode(mode)`
    (a copy in another permission mode, for differential runs), with `permission_modes` (the modes it accepts, which
    `--agent-audit` tries by default)."""

    run: Callable[..., RunOutcome]
