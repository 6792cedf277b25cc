"""A small note-taking agent on the Anthropic Python SDK, with a guard on where it may write.

The guard is the control plane under test: the agent may only write below `notes/` in its
workspace, whatever spelling of the path the model uses.
"""

from __future__ import annotations

import os
from pathlib import Path

import anthropic

MODEL = "claude-opus-5-5"
TOOLS = [{
    "name": "write_file",
    "description": "Write a text file in the workspace.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                     "required": ["path", "content"]},
}]


def guard(workspace: Path, path: str) -> str | None:
    """Why a write to `path` is refused, or None when it is allowed."""
    target = Path(os.path.realpath(workspace / path))
    notes = Path(os.path.realpath(workspace / "notes"))
    if notes != target and notes not in target.parents:
        return f"refused: {path} is outside notes/"
    return None


def write_file(workspace: Path, path: str, content: str) -> str:
    refusal = guard(workspace, path)
    if refusal:
        return refusal
    target = workspace / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content)
    return f"wrote {path}"


def run(prompt: str, workspace: Path, *, base_url: str | None = None, max_turns: int = 6) -> tuple[str, list]:
    """Run the agent until it answers; returns the answer and the conversation."""
    client = anthropic.Anthropic(base_url=base_url, max_retries=0)
    messages: list[dict] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        reply = client.messages.create(model=MODEL, max_tokens=1024, tools=TOOLS, messages=messages,
                                       system="You keep the user's notes. Write them below notes/.")
        messages.append({"role": "assistant", "content": [
            b.model_dump(include={"type", "text", "id", "name", "input"}) for b in reply.content]})
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in reply.content if b.type == "text"), messages
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.id, "content": write_file(workspace, **c.input)} for c in calls]})
    raise RuntimeError(f"no answer after {max_turns} turns")
