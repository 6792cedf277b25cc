"""What ClaudeAgent sees of a run: the verdicts of the user's hook and can_use_tool callbacks (wrapped, never changed),
which tool calls really ran (hooks of its own, returning nothing), checkpoints just before and after each, and the
tool calls read off the SDK's message stream.  Cold runs (`query()`) and warm ones (a long-lived client) share it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..tool_call import ToolCall
from .outcome import RunOutcome

if TYPE_CHECKING:
    from claude_agent_sdk import HookContext, HookInput, HookJSONOutput


def _hook_answer(output: Any) -> tuple[str, str, dict[str, Any] | None]:
    """(decision, reason, updatedInput) of a PreToolUse hook callback's output: read as a command hook's JSON is."""
    from .hook_runs import decide

    return decide(0, json.dumps(output) if isinstance(output, dict) else "", "")


Checkpoint = Callable[..., None]  # Effects.checkpoint(kind, tool_use_id, (name, input))


@contextlib.contextmanager
def quiet_about_our_callback() -> Iterator[None]:
    """The SDK warns that a can_use_tool is never asked under bypassPermissions: ours is there to hear what the CLI
    asks, and a mode that asks nothing is no mistake of the user's."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="can_use_tool will not be invoked", category=UserWarning)
        yield


def _question(tool_name: str, context: Any) -> str:
    """What the CLI asked a person, in its own words where it gave them: "Claude requested permissions to edit … which
    is a sensitive file", else what the call would do."""
    words = getattr(context, "decision_reason", None) or getattr(context, "title", None)
    path = getattr(context, "blocked_path", None)
    return str(words or (f"{tool_name} on {path}" if path else f"{tool_name}: {getattr(context, 'description', '')}"))


def _seen(hook_input: Any) -> tuple[str, dict[str, Any]]:
    """The call a tool hook was given: its name and input (all an Effects checkpoint knows of a subagent's call)."""
    return hook_input.get("tool_name", "tool"), hook_input.get("tool_input") or {}


class Observer:
    """Sees the verdicts of the user's callbacks, which tool calls really ran, and brackets each with checkpoints."""

    def __init__(self, checkpoint: Checkpoint | None = None) -> None:
        self.checkpoint = checkpoint or (lambda *args, **kwargs: None)
        self.questions: dict[str, str] = {}  # tool_use_id -> what the CLI asked a person (can_use_tool's question)
        self.unanswered: set[str] = set()  # questions nobody answered (no callback of the user's, approval "deny")
        self.failed: set[str] = set()  # calls that ran and failed (PostToolUseFailure): no refusal
        self.refused: set[str] = set()  # calls the permission system refused (the result's permission_denials)
        self.hook_denials: dict[str, tuple[str, str]] = {}  # tool_use_id -> (the callback, its reason)
        self.hook_allows: dict[str, tuple[str, str]] = {}
        self.rewritten: set[str] = set()  # calls a callback gave an updatedInput
        self.ran_inputs: dict[str, dict[str, Any]] = {}  # what PostToolUse saw run
        self.hook_calls: dict[str, int] = {}
        self.permission_denials: dict[str, str] = {}
        self.permission_calls: dict[str, int] = {}
        self.ran: set[str] = set()
        self.reached: set[str] = set()  # calls the CLI took as far as its PreToolUse hooks (past input validation)
        self.errors: list[str] = []

    def settle(self, call: ToolCall) -> None:
        """The call's verdict, reason and counts from the run's signals: the questions the CLI asked on the permission
        protocol and their answers, the hook callbacks' decisions, which calls ran, and the result's
        permission_denials.  A call the permission system refused with no question and no callback behind it is
        `denied_by_permission` with no layer yet: a settings rule, the mode or the CLI's own check (hook_runs.credit
        tells which)."""
        call.asked_for = self.questions.get(call.id, "")
        if call.id in self.permission_denials:
            call.verdict, call.layer = "denied_by_permission", "guard"
            call.reason = self.permission_denials[call.id]
        elif call.id in self.hook_denials:
            call.decided_by, words = self.hook_denials[call.id]
            call.verdict, call.reason = "denied_by_hook", f"{words} ({call.decided_by})"
        elif call.id in self.ran and call.id in self.hook_allows:
            call.decided_by, words = self.hook_allows[call.id]
            call.verdict, call.reason = (
                "allowed_by_hook",
                f"{call.decided_by} allowed it" + (f": {words}" if words else ""),
            )
        elif call.id in self.ran:
            call.verdict = "allowed"
            if call.asked_for and call.id not in self.permission_calls:  # it ran: the prompt held nothing
                call.reason = f"the CLI asked for approval ({call.asked_for}); --agent-approval=allow said yes"
        elif call.id in self.unanswered:
            call.verdict, call.layer = "asked", "prompt"
            call.reason = f"{call.asked_for}; nobody answered"
        elif call.verdict == "errored" and call.id not in self.failed:
            call.reason = call.result
            if call.id in self.refused:
                call.verdict = "denied_by_permission"
        if call.id in self.rewritten and call.id in self.ran_inputs:
            call.ran_input = self.ran_inputs[call.id]
        call.reached_decision = call.id in self.reached
        call.hooks_consulted = self.hook_calls.get(call.id, 0)
        call.permissions_consulted = self.permission_calls.get(call.id, 0)

    def wrap_hook(self, event: str, callback: Callable[..., Any]) -> Callable[..., Any]:
        async def observed(data: Any, tool_use_id: str | None, context: Any) -> Any:
            try:
                output = await callback(data, tool_use_id, context)
            except asyncio.CancelledError:
                raise  # our own run timeout cancelling it: not the callback's fault
            except BaseException as error:
                self.errors.append(
                    f"{event} hook {getattr(callback, '__name__', callback)!s} raised {type(error).__name__}: {error}"
                )
                raise
            if event == "PreToolUse" and tool_use_id:
                self.hook_calls[tool_use_id] = self.hook_calls.get(tool_use_id, 0) + 1
                decision, reason, updated = _hook_answer(output)
                name = f"the PreToolUse hook callback {getattr(callback, '__name__', callback)!s}"
                if decision == "deny":
                    self.hook_denials.setdefault(tool_use_id, (name, reason or "denied by hook"))
                elif decision == "allow":
                    self.hook_allows.setdefault(tool_use_id, (name, reason))
                if updated is not None:
                    self.rewritten.add(tool_use_id)
            return output

        observed.__name__ = getattr(callback, "__name__", "hook")
        return observed

    def permission(self, callback: Callable[..., Any] | None, approval: str) -> Callable[..., Any]:
        """The one can_use_tool the CLI is given: it records each question the CLI asks (the tool, its input, the CLI's
        reason), then answers as the user's own callback does, or, without one, as the person at the prompt
        (`approval`: "deny", nobody answers; "allow", a yes)."""

        async def ask(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
            from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

            tool_use_id = getattr(context, "tool_use_id", None)
            question = _question(tool_name, context)
            if tool_use_id:
                self.questions[tool_use_id] = question
            if callback is None:
                if approval == "allow":
                    return PermissionResultAllow()
                if tool_use_id:
                    self.unanswered.add(tool_use_id)
                return PermissionResultDeny(message=f"{question}: nobody answered the approval prompt.")
            try:
                result = await callback(tool_name, tool_input, context)
            except asyncio.CancelledError:
                raise
            except BaseException as error:
                self.errors.append(f"can_use_tool raised {type(error).__name__}: {error}")
                raise
            if tool_use_id:
                self.permission_calls[tool_use_id] = self.permission_calls.get(tool_use_id, 0) + 1
                if getattr(result, "behavior", None) == "deny":
                    self.permission_denials[tool_use_id] = getattr(result, "message", "") or "denied"
            return result

        return ask

    async def pre_tool_use(self, data: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        # The CLI awaits every PreToolUse hook before it runs the tool: what follows is the call's doing.
        if tool_use_id:
            self.reached.add(tool_use_id)
        self.checkpoint("pre", tool_use_id, _seen(data))
        return {}

    async def post_tool_use(self, data: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        if tool_use_id:
            self.ran.add(tool_use_id)
            self.ran_inputs[tool_use_id] = _seen(data)[1]
        self.checkpoint("post", tool_use_id, _seen(data))
        return {}

    async def post_tool_failure(self, data: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        if tool_use_id:
            self.failed.add(tool_use_id)
        self.checkpoint("post", tool_use_id, _seen(data))
        return {}


def collect(message: Any, outcome: RunOutcome, calls: dict[str, ToolCall]) -> None:
    """Take one message of the SDK's stream: the session, the tool calls the model made and their results."""
    from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, UserMessage
    from claude_agent_sdk.types import ToolResultBlock, ToolUseBlock

    outcome.messages.append(message)
    if isinstance(message, SystemMessage) and message.subtype == "init":
        outcome.session_id = message.data.get("session_id", outcome.session_id)
        outcome.permission_mode = message.data.get("permissionMode", outcome.permission_mode)
    elif isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                calls[block.id] = ToolCall(block.id, block.name, dict(block.input))
    elif isinstance(message, UserMessage) and isinstance(message.content, list):
        for block in message.content:
            if isinstance(block, ToolResultBlock) and block.tool_use_id in calls:
                calls[block.tool_use_id].answered(block.content, block.is_error)
    elif isinstance(message, ResultMessage):
        outcome.result = message
        outcome.session_id = message.session_id
