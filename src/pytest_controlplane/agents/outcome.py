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
    permissions_consulted: int = 0  # can_use_tool callbacks that ran for this call
    observed: bool = True  # False: read off the model's exchanges (a CommandAgent), so the counts are unknown
    # Did the call get past the agent's own input checks to where the control plane decides (the CLI's PreToolUse
    # stage)?  False: refused before any decision (an unknown tool, a NotebookEdit of a file that is no notebook).
    # None: cannot tell.
    reached_decision: bool | None = None

    def answered(self, content: Any, is_error: bool | None) -> None:
        """Take the tool_result the agent sent the model for this call: its text, and "errored" or "allowed"."""
        self.result = result_text(content)
        self.verdict = "errored" if is_error else "allowed"

    @property
    def denied(self) -> bool:
        return self.verdict.startswith("denied")

    @property
    def consulted(self) -> str:
        """ "hooks consulted: 1, callback consulted: 0", or "consulted: cannot tell" for an agent seen from outside.
        Under acceptEdits the CLI approves workspace edits and commands such as `rm` without asking can_use_tool:
        a 0 here says the callback never saw the call."""
        if not self.observed:
            return "consulted: cannot tell"
        return f"hooks consulted: {self.hooks_consulted}, callback consulted: {self.permissions_consulted}"

    def __repr__(self) -> str:
        reason = f", reason={self.reason[:80]!r}" if self.reason else ""
        return f"ToolCall({self.name} {self.id}: {self.verdict}{reason}; {self.consulted})"


@dataclass
class RunOutcome:
    """The SDK message stream, the tool calls, the final result and the session of one run."""

    session_id: str | None = None
    messages: list[Any] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    result: Any = None
    stdout: str = ""  # a command agent's standard output
    stderr: list[str] = field(default_factory=list)
    error: BaseException | None = None
    stray_processes: list[str] = field(default_factory=list)  # still running after the run, killed ("pid command")
    callback_errors: list[str] = field(default_factory=list)  # raised inside hooks/can_use_tool (the SDK swallows them)


def calls_seen_by_model(exchanges: list[Any]) -> list[ToolCall]:
    """Tool calls as the model saw them, for agents whose control plane we cannot watch (a command).

    Each tool_use the model emitted, judged by the tool_result the agent sent back in a later
    request: "errored" when it says is_error (a refusal looks the same from here), "allowed"
    otherwise, "not_run" when no result ever came back.
    """
    calls: dict[str, ToolCall] = {}
    for exchange in exchanges:
        body = exchange.request.json if isinstance(exchange.request.json, dict) else {}
        for message in body.get("messages", []):
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    call = calls.get(block.get("tool_use_id", ""))
                    if call is not None and call.verdict == "not_run":
                        call.answered(block.get("content"), block.get("is_error"))
                        call.reason = call.result if block.get("is_error") else ""
        answer = exchange.answer
        for block in (answer or {}).get("content", []):
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls.setdefault(
                    block["id"], ToolCall(block["id"], block["name"], dict(block.get("input") or {}), observed=False)
                )
    return list(calls.values())


def result_text(content: Any) -> str:
    """The text of a tool_result's content (a string, or a list of text blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return "" if content is None else str(content)
