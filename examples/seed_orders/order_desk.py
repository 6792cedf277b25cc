#!/usr/bin/env python3
"""An order-desk agent in the seed's shape: the Anthropic SDK, a tool loop, a REPL and a session kept as JSON.

    python order_desk.py --session asha                      # starts or resumes the session "asha"
    python order_desk.py --session asha-2 --fork-from asha   # a new session that starts as a copy of "asha"

Each line on stdin is a prompt, answered on stdout; `quit` or the end of input ends it.  The session is saved to
sessions/<name>.json after every turn, in place.  Its one tool, get_order, looks an order up by its id in orders.json:
the tool's input names no file, and a resumed session carries what it answered.
"""

import argparse
import json
import sys
from pathlib import Path

import anthropic

MODEL = "claude-opus-5-5"
SYSTEM = "You answer customers' questions about their orders. Look orders up with get_order."
SESSIONS = Path("sessions")
TOOLS = [{"name": "get_order", "description": "Look an order up by its id.",
          "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}},
                           "required": ["order_id"]}}]


def get_order(order_id, orders=Path("orders.json")):
    """The record of order `order_id` in `orders` (a JSON list of orders), as JSON."""
    found = [order for order in json.loads(Path(orders).read_text()) if order["id"] == order_id]
    return json.dumps(found[0]) if found else f"no order {order_id}"


def save_session(name, messages):
    SESSIONS.mkdir(exist_ok=True)
    with open(SESSIONS / f"{name}.json", "w") as out:
        json.dump({"name": name, "messages": messages}, out)


def load_session(name):
    path = SESSIONS / f"{name}.json"
    return json.loads(path.read_text())["messages"] if path.exists() else []


def run_turn(client, name, messages, prompt):
    """Answer `prompt` in the session: call the model, run the tools it asks for, until it answers."""
    messages.append({"role": "user", "content": prompt})
    while True:
        reply = client.messages.create(model=MODEL, max_tokens=1024, system=SYSTEM, tools=TOOLS, messages=messages)
        messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True)
                                                          for block in reply.content]})
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            save_session(name, messages)
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call.id, "content": get_order(**call.input)} for call in calls]})
        save_session(name, messages)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", required=True, help="the session to start or resume")
    parser.add_argument("--fork-from", help="start the session as a copy of this one")
    args = parser.parse_args()
    messages = load_session(args.fork_from or args.session)
    client = anthropic.Anthropic()
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        if line.strip():
            print(run_turn(client, args.session, messages, line.strip()), flush=True)


if __name__ == "__main__":
    main()
