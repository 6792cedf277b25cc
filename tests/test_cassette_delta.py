"""Linear cassettes: a growing conversation stored as deltas loads back exactly, and old files still load."""

from __future__ import annotations

import json

import yaml

from pytest_controlplane import Cassette
from pytest_controlplane.cassette import delta
from pytest_controlplane.cassette.store import Interaction

SYSTEM = [{"type": "text", "text": "You are an agent. " * 2000, "cache_control": {"type": "ephemeral"}}]


def conversation(turns: int) -> list[bytes]:
    """Request bodies as the CLI sends them: the whole history each time, the cache mark on the newest block."""
    bodies, messages = [], [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for turn in range(turns):
        marked = json.loads(json.dumps(messages))
        marked[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        bodies.append(json.dumps({"model": "m", "max_tokens": 64, "system": SYSTEM, "messages": marked,
                                  "metadata": {"user_id": "u"}}).encode())
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{turn}", "name": "Read",
                                                           "input": {"file_path": f"{turn}.txt"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{turn}",
                                                      "content": f"line {turn}\n" * 50}]})
    return bodies


def test_deltas_rebuild_every_body_exactly_and_grow_linearly():
    bodies = conversation(60)
    stored = delta.encode(bodies)
    assert [json.loads(b) for b in delta.decode(stored)] == [json.loads(b) for b in bodies]
    assert stored[0] == bodies[0] and all(b.startswith(b'{"$controlplane":"delta-v1"') for b in stored[1:])
    full, compact = sum(map(len, bodies)), sum(map(len, stored))
    unique = len(bodies[-1])  # the last request holds the system prompt and every message once
    assert full > 20 * unique and compact < 1.2 * unique, (full, compact, unique)


def test_a_cassette_of_deltas_replays_and_a_full_body_one_still_loads(tmp_path):
    bodies = conversation(8)
    response = {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": b"{}"}}
    cassette = Cassette(tmp_path / "c.yaml")
    for body in bodies:
        cassette.add(Interaction("POST", "http://api/v1/messages", body, {}, response))
    cassette.save()
    raw = yaml.safe_load(cassette.path.read_text())
    assert "delta-v1" in raw["interactions"][3]["request"]["body"]  # stored as a delta, still a vcrpy body string
    loaded = Cassette.load(cassette.path)
    for body in bodies:
        assert loaded.find("POST", "/v1/messages", body) is not None  # matched through the index
    old = tmp_path / "old.yaml"  # what format 1 wrote: every body in full
    raw["interactions"] = [{**i, "request": {**i["request"], "body": body.decode()}}
                           for i, body in zip(raw["interactions"], bodies, strict=True)]
    old.write_text(yaml.safe_dump(raw))
    assert [i.body for i in Cassette.load(old).interactions] == bodies
