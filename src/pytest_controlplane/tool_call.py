"""One tool call the model asked for, and what the control plane made of it: shared by the adapters that see it
happen, the effects oracle that attributes changes to it, and the bypass judge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# asked: the CLI asked for approval and nobody answered (nothing is asked of a person in a test run).
VERDICTS = ("allowed", "allowed_by_hook", "denied_by_hook", "denied_by_permission", "asked", "errored", "not_run")
RAN = ("allowed", "allowed_by_hook")  # the tool ran


@dataclass
class ToolCall:
    """One tool call the model asked for, and what the control plane made of it."""

    id: str
    name: str
    input: dict[str, Any]
    verdict: str = "not_run"  # one of VERDICTS
    reason: str = ""  # the deny message, the error text; for a hook's decision the hook is named in it
    result: str = ""  # what the tool (or the refusal) returned to the model
    hooks_consulted: int = 0  # PreToolUse hooks (SDK callbacks and command hooks) that ran for this call
    permissions_consulted: int = 0  # can_use_tool callbacks that ran for this call
    observed: bool = True  # False: read off the model's exchanges (a CommandAgent), so the counts are unknown
    # Did the call get past the agent's own input checks to where the control plane decides (the CLI's PreToolUse
    # stage)?  False: refused before any decision (an unknown tool, a NotebookEdit of a file that is no notebook).
    # None: cannot tell.
    reached_decision: bool | None = None
    decided_by: str = ""  # the hook (or rule) whose decision the verdict is: "the PreToolUse command hook `...` (...)"
    ran_input: dict[str, Any] | None = None  # what ran instead of `input`, when a hook rewrote it (updatedInput)
    hook_runs: list[str] = field(default_factory=list)  # the PreToolUse command hooks that saw it, and their answers
    layer: str = ""  # who decided it: one of layers.LAYERS ("guard", "rule", "prompt", ...), set once the run ends
    # Did a shell call run inside the OS sandbox (agents/sandbox.py)?  None: no sandbox was asked for, or cannot tell.
    sandboxed: bool | None = None
    sandbox_note: str = ""  # "sandboxed", or why not: "unsandboxed: dangerouslyDisableSandbox", ...
    # What the CLI asked a person about on the permission protocol (its can_use_tool question), "" if it asked nothing.
    asked_for: str = ""
    # The layer was read off the CLI's words (layers.py), not from a signal: a hook record, the permission protocol,
    # the result's permission_denials with a matching rule, the sandbox's state and the OS's error.
    inferred: bool = False

    def answered(self, content: Any, is_error: bool | None) -> None:
        """Take the tool_result the agent sent the model for this call: its text, and "errored" or "allowed"."""
        self.result = result_text(content)
        self.verdict = "errored" if is_error else "allowed"

    @property
    def denied(self) -> bool:
        return self.verdict.startswith("denied")

    @property
    def ran(self) -> bool:
        return self.verdict in RAN

    @property
    def effective_input(self) -> dict[str, Any]:
        """What ran: the input a hook rewrote it to, else the model's."""
        return self.ran_input if self.ran_input is not None else self.input

    @property
    def consulted(self) -> str:
        """ "hooks consulted: 1, callback consulted: 0", or "consulted: cannot tell" for an agent seen from outside.
        Under acceptEdits the CLI approves workspace edits and commands such as `rm` without asking can_use_tool:
        a 0 here says the callback never saw the call."""
        if not self.observed:  # what the command hooks said is logged; the rest cannot be seen from outside
            return (
                f"command hooks consulted: {self.hooks_consulted}, callbacks: cannot tell"
                if self.hook_runs
                else ("consulted: cannot tell")
            )
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
