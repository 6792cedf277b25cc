"""Which session a test means: a name it gave (`run(prompt, session=NAME)`, `fork(..., name=NAME)`) or the id of a
session the agent ran or has stored.  Anything else is an error naming the sessions there are: a check of a session
that does not exist would pass."""

from __future__ import annotations

from typing import Any

from .errors import ConfigError, ControlPlaneError
from .recovery import refuse_empty, stored_history


def resolve(session: Any, wanted: str) -> str:
    """The agent's id for `wanted` in an AgentSession `session`."""
    if wanted in session.names:
        return str(session.names[wanted])
    ran = [*session._started, *(o.session_id for o in session.runs), *(o.resumed for o in session.runs)]
    known = list(dict.fromkeys(i for i in ran if i))
    if wanted in known or _stored(session, wanted):
        return wanted
    named = ", ".join(f"{n!r} (id {i})" if n != i else repr(n) for n, i in session.names.items()) or "none"
    unnamed = ", ".join(i for i in known if i not in session.names.values()) or "none"
    raise ConfigError(
        f"No session {wanted!r} in this test: it is neither a session name nor the id of a session the agent "
        f"ran or stored.  Session names: {named}.  Unnamed sessions run: {unnamed}.",
        hint="Pass a name given with agent_session.run(prompt, session=NAME) or fork(..., name=NAME), or the id "
        "of a session the agent ran (agent_session.names maps each name to its id).",
    )


def resumable(session: Any, wanted: str) -> str:
    """The id of the session a run continues; one whose transcript holds no conversation is refused (the CLI cannot
    resume it)."""
    resolved = resolve(session, wanted)
    refuse_empty(session.agent, session.world, resolved)
    return resolved


def _stored(session: Any, session_id: str) -> bool:
    """Whether the agent has something stored as `session_id` (a torn or unreadable session counts)."""
    try:
        return stored_history(session.agent, session.world, session_id) is not None
    except ControlPlaneError:
        return True  # something is stored there, if not readable: the check that uses it says what
