"""What an agent session needs of an agent: `ClaudeAgent`, `CommandAgent` and `LoopAgent` implement it, and so may
a user's own adapter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigError
from .outcome import RunOutcome
from .world import World


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


# The optional readers of what a session stored (see AgentAdapter): what needs each, and its signature.
_STORE_READERS = {
    "transcript": ("transcript_path()", "transcript(world, session_id) -> Path (the file the session is stored in)"),
    "history": ("history", "history(world, session_id) -> list[dict] (the messages the session stored)"),
}


def store_reader(agent: AgentAdapter, name: str) -> Callable[[World, str], Any]:
    """The adapter's `transcript` or `history` method, which AgentAdapter leaves optional: a ConfigError if it has
    none (rather than an AttributeError from deep inside the session)."""
    reader = getattr(agent, name, None)
    if not callable(reader):
        needed_by, signature = _STORE_READERS[name]
        raise ConfigError(
            f"agent_session.{needed_by} needs the agent's {name} method, and {type(agent).__name__} has none.",
            hint=f"Give {type(agent).__name__} a method {signature}; AgentAdapter leaves it optional.",
        )
    return reader
