"""The reference agent loop on the Anthropic Python SDK: call the model, run the tools it asks for, repeat.

    answer, messages = run_agentic_loop(messages, system, tools, {"read_file": read_file}, max_iterations=8)

The loop never changes the list it is given: it returns a new one that starts with it.  Blocks are
stored as plain dicts (see store.plain), so `messages` can be saved, resumed and sent again as is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .store import plain

DEFAULT_MODEL = "claude-sonnet-5-5"


def run_agentic_loop(
    messages: Sequence[dict[str, Any]],
    system: str = "",
    tools: Sequence[dict[str, Any]] = (),
    tool_impls: Mapping[str, Callable[..., Any]] | None = None,
    max_iterations: int = 10,
    *,
    client: Any = None,
    model: str = DEFAULT_MODEL,
    max_tokens: int = 1024,
) -> tuple[str, list]:
    """Run until the model answers without asking for a tool; return (answer, messages).

    A tool that raises, or that the model names but `tool_impls` lacks, is answered with an
    error tool_result (`is_error`), as the API expects; the loop goes on.  After `max_iterations`
    model calls without a final answer the loop stops and says so in the answer.
    `client` defaults to `anthropic.Anthropic()` (ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY from the env).
    """
    if client is None:
        import anthropic

        client = anthropic.Anthropic()
    impls = dict(tool_impls or {})
    history: list[dict[str, Any]] = plain(list(messages))
    extra: dict[str, Any] = {}
    if system:
        extra["system"] = system
    if tools:
        extra["tools"] = list(tools)
    for _ in range(max_iterations):
        reply = client.messages.create(model=model, max_tokens=max_tokens, messages=history, **extra)
        content = plain(reply.content)
        history.append({"role": "assistant", "content": content})
        calls = [block for block in content if block.get("type") == "tool_use"]
        if not calls:
            return "".join(block.get("text", "") for block in content if block.get("type") == "text"), history
        history.append({"role": "user", "content": [_run_tool(impls, call) for call in calls]})
    return f"[stopped: no final answer after {max_iterations} model calls]", history


def _run_tool(impls: Mapping[str, Callable[..., Any]], call: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call["id"]}
    impl = impls.get(call["name"])
    if impl is None:
        return {**result, "is_error": True, "content": f"unknown tool {call['name']!r}"}
    try:
        output = impl(**call.get("input", {}))
    except Exception as error:  # noqa: BLE001 - the model is told, as the API expects
        return {**result, "is_error": True, "content": f"{type(error).__name__}: {error}"}
    return {**result, "content": "" if output is None else str(output)}
