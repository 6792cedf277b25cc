"""One tool call the model asked for, and what the control plane made of it: shared by the adapters that see it
happen, the effects oracle that attributes changes to it, and the bypass judge."""

from __future__ import annotations

from dataclasses import dataclass
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


def result_text(content: Any) -> str:
    """The text of a tool_result's content (a string, or a list of text blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return "" if content is None else str(content)
