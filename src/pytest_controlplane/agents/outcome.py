"""What one agent run produced, in a shape common to every adapter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import AgentError, ControlPlaneError, ours
from ..tool_call import ToolCall
from .process import stderr_tail

__tracebackhide__ = ours  # our errors show without our frames


@dataclass
class RunOutcome:
    """The SDK message stream, the tool calls, the final result and the session of one run."""

    session_id: str | None = None
    permission_mode: str | None = None  # the mode the CLI says the session began in (its init message)
    messages: list[Any] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    result: Any = None
    stdout: str = ""  # a command agent's standard output
    stderr: list[str] = field(default_factory=list)
    error: BaseException | None = None
    stray_processes: list[str] = field(default_factory=list)  # still running after the run, killed ("pid command")
    callback_errors: list[str] = field(default_factory=list)  # raised inside hooks/can_use_tool (the SDK swallows them)
    hook_runs: list[Any] = field(default_factory=list)  # the command hooks that ran (agents.hook_runs.HookRun)
    resumed: str | None = None  # the session this run continued (or forked), if any
    first_exchange: int = 0  # the index of its first model exchange in the gateway's list
    sandbox: Any = None  # the OS sandbox its settings asked for (agents.sandbox.Sandbox), for a Claude agent
    cli: Any = None  # the Claude Code CLI that ran it (clis.choice.Cli), for a Claude agent

    def last_words(self, limit: int = 300) -> str:
        """What the agent last said before it ended: its result's text, else the last tool result or refusal it gave
        the model ("" when it said nothing: it never started)."""
        said = getattr(self.result, "result", None) or next(
            (c.result or c.reason for c in reversed(self.tool_calls) if c.result or c.reason), ""
        )
        said = " ".join(str(said).split())
        return said if len(said) <= limit else said[: limit - 1] + "…"


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


def raise_for(outcome: RunOutcome, problem: ControlPlaneError | None, *, answered: bool) -> None:
    """The run's failure, the most telling account first: a callback that raised (what followed it, a replay miss
    included, is its consequence: the agent sent the model something else), the gateway's own `problem` (it beats the
    agent's paraphrase of a 403), the agent's error, or a run that never called the model (`answered` False)."""
    if outcome.callback_errors:
        first = str(problem).splitlines()[0] if problem else ""
        then = f"\nWhat followed, most likely because of it: {type(problem).__name__}: {first}" if problem else ""
        raise AgentError(
            "A control-plane callback raised during the run (the SDK swallows these): "
            + "; ".join(outcome.callback_errors)
            + then,
            hint="Fix the callback: a hook or can_use_tool that raises decides nothing.",
        )
    if problem is not None:
        raise problem
    if isinstance(outcome.error, ControlPlaneError):
        raise outcome.error
    if outcome.error is not None:
        raise AgentError(
            f"The agent failed: {type(outcome.error).__name__}: {outcome.error}\n"
            f"stderr tail:\n{stderr_tail(outcome.stderr)}",
            stderr=outcome.stderr,
            hint="The error and the stderr tail say why: the adapter's run() raised it, not the control plane.",
        ) from outcome.error
    if not answered:
        raise AgentError(
            f"The agent finished without calling the model once.\nstderr tail:\n{stderr_tail(outcome.stderr)}",
            stderr=outcome.stderr,
            hint="Check that the agent honours ANTHROPIC_BASE_URL (it is set to the gateway) and "
            "reads its prompt (from stdin, for a CommandAgent).",
        )
