"""Every exception pytest-controlplane raises, under two roots: a verdict (the control plane did not hold: an
assertion, so pytest reports it as a test failure) and an error (misuse, or what stood in the way of a verdict).

    ControlPlaneFailure (AssertionError)
    ├── EffectViolation            a file the agent must not change changed (effects)
    ├── CanaryLeaked               (.leaks) a planted secret reached where it must not (canary)
    ├── BypassSucceeded            a bypass variant had its forbidden effect (bypass)
    ├── BypassInconclusive         a variant's attempt never ran, not by the control plane's doing (bypass)
    └── HistoryInconsistent        a stored history, or a crash and resume, is not one consistent history (crash)

    ControlPlaneError
    ├── ConfigError                a bad option, ini value, marker argument or fixture use
    ├── CassetteError              (.path)
    │   ├── CassetteNotFound       replay asked for a cassette that does not exist
    │   ├── CassetteCorrupt        the file is not a loadable vcrpy cassette, or an answer in it is malformed
    │   ├── CassetteVersionMismatch  recorded with another Claude Code CLI version
    │   └── UnusedInteractions     recorded interactions the run never asked for
    ├── GatewayError               something the model gateway could not answer
    │   ├── ReplayMiss             (.request, .closest, .diff) no recorded response matches
    │   ├── ScriptExhausted        the scripted model ran out of turns
    │   ├── UnusedScriptTurns      scripted turns the agent never asked for
    │   ├── MissingApiKey          record/live mode without ANTHROPIC_API_KEY
    │   ├── BudgetExceeded         record/live: the run has used its token or dollar budget
    │   └── UpstreamError          the upstream API could not be reached or failed
    ├── AgentError                 the agent under test crashed, hung or never called the model
    └── SessionError               (.path) a saved agent session could not be used
        ├── SessionNotFound        fork or load of a session that does not exist
        ├── SessionCorrupt         a torn, foreign or mis-serialised session file
        ├── SessionFormatError     messages a session cannot hold, or a loop that broke its contract
        └── StaleSession           (.changed) files the session read changed since it was saved

Outside both: `VariantNotApplicable` (unittest.SkipTest: the variant's route does not exist for this agent, a skip)
and `SimulatedCrash` (BaseException: how a crash test stops an in-process agent, never seen by a test).

Each message says what happened and the exact fix.  `hint` holds the fix alone, so reports can
show it apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def ours(excinfo: Any) -> bool:
    """The core modules' `__tracebackhide__`: pytest hides their frames when the error is one of ours (its message
    says what happened and the fix, so forty lines of the gateway's traceback only bury it) and shows them for
    anything else (a bug of ours)."""
    return type(getattr(excinfo, "value", None)).__module__.startswith(__name__.rsplit(".", 1)[0])


class ControlPlaneFailure(AssertionError):
    """Root of every verdict: the control plane did not hold.  The message shows what happened and where."""


class ControlPlaneError(Exception):
    """Root of every pytest-controlplane error."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str = "") -> None:
        self.hint = hint
        super().__init__(f"{message}\n{hint}" if hint else message)


class ConfigError(ControlPlaneError):
    """A bad option, ini value, marker argument or fixture use."""


class CassetteError(ControlPlaneError):
    def __init__(self, message: str, *, path: Path | str, hint: str = "") -> None:
        self.path = Path(path)
        super().__init__(message, hint=hint)


class CassetteNotFound(CassetteError):
    """Replay asked for a cassette that does not exist."""


class CassetteCorrupt(CassetteError):
    """The file exists but cannot be loaded as a vcrpy cassette, or a recorded answer in it is malformed (a torn
    line, an event missing or out of order, a body of the wrong type, compressed bytes that do not decode)."""


class CassetteVersionMismatch(CassetteError):
    """The cassette was recorded with another Claude Code CLI version than the one running."""


class UnusedInteractions(CassetteError):
    """Recorded interactions that the run never asked for."""


class GatewayError(ControlPlaneError):
    """Something the model gateway could not answer."""


class ReplayMiss(GatewayError):
    """No recorded response matches a request the agent sent."""

    def __init__(self, message: str, *, request: object, diff: str = "", hint: str = "") -> None:
        self.request = request
        self.diff = diff
        super().__init__(message, hint=hint)


class ScriptExhausted(GatewayError):
    """The scripted model was asked for more turns than it has."""


class UnusedScriptTurns(GatewayError):
    """Scripted turns that the agent never asked for."""


class MissingApiKey(GatewayError):
    """Record or live mode without an API key to forward."""


class BudgetExceeded(GatewayError):
    """Record/live: the run has used its --agent-max-tokens / --agent-budget-usd; the real API is not called."""


class UpstreamError(GatewayError):
    """The upstream API could not be reached or failed."""


class AgentError(ControlPlaneError):
    """The agent under test crashed, hung or never called the model; `stderr`: what it wrote there, by line."""

    def __init__(self, message: str, *, hint: str = "", stderr: Sequence[str] = ()) -> None:
        self.stderr = [line for line in stderr if line.strip()]
        super().__init__(message, hint=hint)


class SessionError(ControlPlaneError):
    def __init__(self, message: str, *, path: Path | str | None = None, hint: str = "") -> None:
        self.path = Path(path) if path is not None else None
        super().__init__(message, hint=hint)


class SessionNotFound(SessionError):
    """Fork or load of a session that does not exist."""


class SessionCorrupt(SessionError):
    """A session file that is torn, foreign, or holds SDK objects serialised as strings."""


class SessionFormatError(SessionError):
    """Messages a session cannot hold, or an agent loop that broke its contract."""


class StaleSession(SessionError):
    """Files the saved session read have changed since it was saved."""

    def __init__(
        self, message: str, *, changed: Sequence[object], path: Path | str | None = None, hint: str = ""
    ) -> None:
        self.changed = changed
        super().__init__(message, path=path, hint=hint)
