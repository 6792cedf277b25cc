#!/usr/bin/env python3
"""The seed design's agent, written the way its users write it: the Anthropic SDK, a loop with two file tools,
and a session kept as its messages list in sessions/<name>.json, saved after every whole turn.

    echo "Summarise todo.txt" | python agent.py --session cleanup     # starts or resumes the session "cleanup"

Its save is the seed's `path.write_text(json.dumps(messages))`: a crash in the middle of that write leaves
half a file, and the next resume cannot read it.  `write_atomically` below is the one-line fix.
"""

import argparse
import json
import os
import sys
from pathlib import Path

import anthropic

MODEL = "claude-opus-5-5"
SYSTEM = "You keep the project's notes. Use the tools to read and write files."
SESSIONS = Path("sessions")
TOOLS = [
    {"name": "read_file", "description": "Read a text file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "write_file", "description": "Write a text file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                      "required": ["path", "content"]}},
]


def read_file(path):
    return Path(path).read_text()


def write_file(path, content):
    Path(path).write_text(content)
    return f"wrote {path}"


def write_atomically(path, text):
    """Write beside the file, flush it to disk, then rename over it: a crash leaves the old file or the new one."""
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def save_session(name, messages):
    path = SESSIONS / f"{name}.json"
    path.parent.mkdir(exist_ok=True)
    text = json.dumps(messages)
    path.write_text(text)  # the seed's save


def load_session(name):
    path = SESSIONS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else []


def run_agentic_loop(client, name, messages, max_iterations=10):
    for _ in range(max_iterations):
        response = client.messages.create(model=MODEL, max_tokens=1024, system=SYSTEM, tools=TOOLS,
                                          messages=messages)
        messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True)
                                                          for block in response.content]})
        calls = [block for block in response.content if block.type == "tool_use"]
        if not calls:
            save_session(name, messages)
            return "".join(block.text for block in response.content if block.type == "text")
        results = []
        for call in calls:
            tool = {"read_file": read_file, "write_file": write_file}[call.name]
            try:
                content = tool(**call.input)
            except OSError as error:
                content = f"error: {error}"
            results.append({"type": "tool_result", "tool_use_id": call.id, "content": content})
        messages.append({"role": "user", "content": results})
        save_session(name, messages)
    return "(stopped: too many turns)"


def resume_session(name, prompt):
    messages = load_session(name)
    messages.append({"role": "user", "content": prompt})
    return run_agentic_loop(anthropic.Anthropic(), name, messages)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", required=True, help="the session to start or resume")
    print(resume_session(parser.parse_args().session, sys.stdin.read()))
