#!/usr/bin/env python3
"""A REPL agent in the shape of a public seed-style one (written here, in its style, not copied): the Anthropic SDK,
a loop with file tools and an order lookup, instructions read from system.txt when there is one, and each session kept
as {"name", "messages"} JSON in sessions/<name>.json, written in place with open("w") + json.dump after every turn,
resumed by name, forked by copy.

    python repl_agent.py asha-case                     # starts or resumes the session "asha-case"
    python repl_agent.py asha-fork --fork-from asha-case

Each line on stdin is a prompt; `/fork NEW` copies the session to NEW and goes on there; `quit` ends it.  It reads
prompts until `quit`: stdin closing first is an error, as for a person who hangs up.  REPL_ATOMIC=1 saves atomically
(temp file + os.replace).
"""

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import anthropic

SESSIONS = Path("sessions")
TOOLS = [{"name": "read_file", "description": "Read a text file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
         {"name": "write_file", "description": "Write a text file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                           "required": ["path", "content"]}},
         {"name": "get_order", "description": "Look an order up by its id.",
          "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}},
                           "required": ["order_id"]}}]


def read_file(path):
    return Path(path).read_text()


def write_file(path, content):
    Path(path).write_text(content)
    return f"wrote {path}"


def get_order(order_id):
    return json.dumps(json.loads(Path("orders.json").read_text())[order_id])


IMPLS = {"read_file": read_file, "write_file": write_file, "get_order": get_order}


def path_of(name):
    return SESSIONS / f"{name}.json"


def save_session(name, messages):
    SESSIONS.mkdir(exist_ok=True)
    if os.environ.get("REPL_ATOMIC") == "1":
        temporary = path_of(name).with_suffix(".tmp")
        with open(temporary, "w") as out:
            json.dump({"name": name, "messages": messages}, out)
        os.replace(temporary, path_of(name))
    else:
        with open(path_of(name), "w") as out:  # truncates first: a crash in the write leaves half a file
            json.dump({"name": name, "messages": messages}, out)


def load_session(name):
    path = path_of(name)
    return json.loads(path.read_text())["messages"] if path.exists() else []


def fork_session(source, new):
    SESSIONS.mkdir(exist_ok=True)
    shutil.copyfile(path_of(source), path_of(new))
    data = json.loads(path_of(new).read_text())
    save_session(new, data["messages"])


def turn(client, name, messages, prompt, system):
    messages.append({"role": "user", "content": prompt})
    while True:
        reply = client.messages.create(model="claude-opus-5-5", max_tokens=512, system=system, tools=TOOLS,
                                       messages=messages)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            save_session(name, messages)
            return "".join(b.text for b in reply.content if b.type == "text")
        results = []
        for call in calls:
            try:
                content = IMPLS[call.name](**call.input)
            except (OSError, KeyError) as error:
                content = f"error: {error}"
            results.append({"type": "tool_result", "tool_use_id": call.id, "content": content})
        messages.append({"role": "user", "content": results})
        save_session(name, messages)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--fork-from")
    args = parser.parse_args()
    name = args.name
    if args.fork_from:
        fork_session(args.fork_from, name)
    messages = load_session(name)
    system = Path("system.txt").read_text() if Path("system.txt").exists() else "You answer questions about files."
    client = anthropic.Anthropic()
    for line in sys.stdin:
        line = line.strip()
        if line == "quit":
            return 0
        if line.startswith("/fork "):
            new = line.split(maxsplit=1)[1]
            fork_session(name, new)
            name = new
            continue
        if line:
            print(turn(client, name, messages, line, system), flush=True)
    print("stdin closed without `quit`", file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main())
