"""What one agent run produced, in a shape common to every adapter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

VERDICTS = ("allowed", "denied_by_hook", "denied_by_permission", "errored", "not_run")


@dataclass
class ToolCall:
    """One tool call the model asked for, and what the control plane made of it."""

    id: str
    name: str
    input: dict[str, Any]
    verdict: str = "not_run"  # one of VERDICTS
    reason: str = ""  # the deny message, the error text
    result: str = ""  # what the tool (or the refusal) returned to the model
    hooks_consulted: int = 0  # PreToolUse hook callbacks that ran for this call

    @property
    def denied(self) -> bool:
        return self.verdict.startswith("denied")

    def __repr__(self) -> str:
        reason = f", reason={self.reason[:80]!r}" if self.reason else ""
        return f"ToolCall({self.name} {self.id}: {self.verdict}{reason})"


@dataclass
class RunOutcome:
    """The SDK message stream, the tool calls, the final result and the session of one run."""

    session_id: str | None = None
    messages: list[Any] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    result: Any = None
    stderr: list[str] = field(default_factory=list)
    error: BaseException | None = None
    callback_errors: list[str] = field(default_factory=list)  # raised inside hooks/can_use_tool (the SDK swallows them)
