"""pytest-controlplane: acceptance tests for the control plane of AI agents.

Everything public is importable from here; heavy modules load on first use, so importing the
package (and the pytest plugin) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "ModelGateway": "pytest_controlplane.gateway.server",
    "ScriptedModel": "pytest_controlplane.gateway.scripted",
    "text": "pytest_controlplane.gateway.scripted",
    "tool_use": "pytest_controlplane.gateway.scripted",
    "ModelRequest": "pytest_controlplane.wire",
    "Exchange": "pytest_controlplane.wire",
    "Cassette": "pytest_controlplane.cassette.store",
    "World": "pytest_controlplane.agents.world",
    "ClaudeAgent": "pytest_controlplane.agents.claude",
    "claude_cli": "pytest_controlplane.agents.claude",
    "CommandAgent": "pytest_controlplane.agents.command",
    "LoopAgent": "pytest_controlplane.agents.loop_agent",
    "run_agentic_loop": "pytest_controlplane.loop.agent_loop",
    "SessionStore": "pytest_controlplane.loop.store",
    "FileChange": "pytest_controlplane.loop.store",
    "save_session": "pytest_controlplane.loop.sessions",
    "load_session": "pytest_controlplane.loop.sessions",
    "resume_session": "pytest_controlplane.loop.sessions",
    "fork_session": "pytest_controlplane.loop.sessions",
    "start_fresh_with_summary": "pytest_controlplane.loop.sessions",
    "ToolCall": "pytest_controlplane.tool_call",
    "Canary": "pytest_controlplane.canary.canary",
    "CanaryLeaked": "pytest_controlplane.canary.canary",
    "Leak": "pytest_controlplane.canary.canary",
    "find_leaks": "pytest_controlplane.canary.canary",
    "check_history": "pytest_controlplane.history.check",
    "Problem": "pytest_controlplane.history.check",
    "CrashPoint": "pytest_controlplane.crash",
    "CrashReport": "pytest_controlplane.crash",
    "SimulatedCrash": "pytest_controlplane.crash",
    "HistoryInconsistent": "pytest_controlplane.crash",
    "Variant": "pytest_controlplane.bypass.variant",
    "corpus": "pytest_controlplane.bypass.corpus",
    "add_route": "pytest_controlplane.bypass.offered",
    "BypassInconclusive": "pytest_controlplane.bypass.judge",
    "BypassOutcome": "pytest_controlplane.bypass.judge",
    "BypassSucceeded": "pytest_controlplane.bypass.judge",
    "VariantNotApplicable": "pytest_controlplane.bypass.judge",
    "SandboxNotRunning": "pytest_controlplane.agents.sandbox",
    "Effects": "pytest_controlplane.effects.oracle",
    "EffectViolation": "pytest_controlplane.effects.oracle",
    "Change": "pytest_controlplane.effects.diff",
    "Snapshot": "pytest_controlplane.effects.snapshot",
    "snapshot": "pytest_controlplane.effects.snapshot",
    "AgentSession": "pytest_controlplane.session",
    "ControlPlaneError": "pytest_controlplane.errors",
    "ControlPlaneFailure": "pytest_controlplane.errors",
    "ConfigError": "pytest_controlplane.errors",
    "CassetteError": "pytest_controlplane.errors",
    "CassetteNotFound": "pytest_controlplane.errors",
    "CassetteCorrupt": "pytest_controlplane.errors",
    "CassetteVersionMismatch": "pytest_controlplane.errors",
    "UnusedInteractions": "pytest_controlplane.errors",
    "GatewayError": "pytest_controlplane.errors",
    "ReplayMiss": "pytest_controlplane.errors",
    "ScriptExhausted": "pytest_controlplane.errors",
    "UnusedScriptTurns": "pytest_controlplane.errors",
    "MissingApiKey": "pytest_controlplane.errors",
    "BudgetExceeded": "pytest_controlplane.errors",
    "UpstreamError": "pytest_controlplane.errors",
    "AgentError": "pytest_controlplane.errors",
    "SessionError": "pytest_controlplane.errors",
    "SessionNotFound": "pytest_controlplane.errors",
    "SessionCorrupt": "pytest_controlplane.errors",
    "SessionFormatError": "pytest_controlplane.errors",
    "StaleSession": "pytest_controlplane.errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_controlplane' has no attribute {name!r}")
    # Not cached in globals(): the module stays the one source of truth even if it is re-imported.
    return getattr(import_module(module), name)


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover
    from .agents.claude import ClaudeAgent, claude_cli
    from .agents.command import CommandAgent
    from .agents.loop_agent import LoopAgent
    from .agents.sandbox import SandboxNotRunning
    from .agents.world import World
    from .bypass.corpus import corpus
    from .bypass.judge import BypassInconclusive, BypassOutcome, BypassSucceeded, VariantNotApplicable
    from .bypass.offered import add_route
    from .bypass.variant import Variant
    from .canary import Canary, CanaryLeaked, Leak, find_leaks
    from .cassette.store import Cassette
    from .crash import CrashPoint, CrashReport, HistoryInconsistent, SimulatedCrash
    from .effects import Change, Effects, EffectViolation, Snapshot, snapshot
    from .errors import (
        AgentError,
        BudgetExceeded,
        CassetteCorrupt,
        CassetteError,
        CassetteNotFound,
        CassetteVersionMismatch,
        ConfigError,
        ControlPlaneError,
        ControlPlaneFailure,
        GatewayError,
        MissingApiKey,
        ReplayMiss,
        ScriptExhausted,
        SessionCorrupt,
        SessionError,
        SessionFormatError,
        SessionNotFound,
        StaleSession,
        UnusedInteractions,
        UnusedScriptTurns,
        UpstreamError,
    )
    from .gateway.scripted import ScriptedModel, text, tool_use
    from .gateway.server import ModelGateway
    from .history.check import Problem, check_history
    from .loop.agent_loop import run_agentic_loop
    from .loop.sessions import fork_session, load_session, resume_session, save_session, start_fresh_with_summary
    from .loop.store import FileChange, SessionStore
    from .session import AgentSession
    from .tool_call import ToolCall
    from .wire import Exchange, ModelRequest
