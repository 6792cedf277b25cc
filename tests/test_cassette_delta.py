"""Linear cassettes: a growing conversation is stored as deltas, loads back byte for byte in linear time, and
every rebuilt request is keyed exactly like the request it was recorded from."""

from __future__ import annotations

import hashlib
import http.client
import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_controlplane import Cassette, ModelGateway, text
from pytest_controlplane.cassette import body as body_module
from pytest_controlplane.cassette import delta
from pytest_controlplane.cassette.body import JsonBody
from pytest_controlplane.cassette.store import Interaction
from pytest_controlplane.errors import CassetteCorrupt
from pytest_controlplane.gateway.backends import NORMALISED_MATCH
from pytest_controlplane.cassette import keys
from pytest_controlplane.cassette.keys import ConversationKeys, quick_key

# What the Claude Code CLI puts in its system prompt that changes from run to run, and a tool whose schema has a
# property called "metadata" (cut like the top-level one: both sides of a match must cut it alike).
SYSTEM = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.e8f; cc_entrypoint=cli"},
          {"type": "text", "text": "You are an agent.\nToday's date is 2026-11-30.\nOS Version: Linux 6.1\n" * 300,
           "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": "Note", "input_schema": {"type": "object", "properties": {"metadata": {"type": "object"}}}}]
RESPONSE = {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": b"{}"}}


def compact(value: object) -> bytes:
    """JSON as the Anthropic SDK and the CLI send it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def conversation(turns: int, *, system: object = SYSTEM, dumps=compact) -> list[bytes]:
    """Request bodies as the CLI sends them: the whole history each time, the cache mark on the newest block."""
    bodies, messages = [], [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for turn in range(turns):
        marked = json.loads(json.dumps(messages))
        marked[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        bodies.append(dumps({"model": "m", "messages": marked, "system": system, "tools": TOOLS,
                             "metadata": {"user_id": f"session-{turn}"}, "max_tokens": 64}))
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{turn}", "name": "Read",
                                                           "input": {"file_path": f"{turn}.txt"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{turn}",
                                                      "content": f"line {turn} — ü\n" * 50}]})
    return bodies


def save(tmp_path, bodies: list[bytes]) -> Cassette:
    cassette = Cassette(tmp_path / "c.yaml")
    for body in bodies:
        cassette.add(Interaction("POST", "http://api/v1/messages", body, {}, RESPONSE))
    cassette.save()
    return cassette


def test_deltas_rebuild_every_body_byte_for_byte_and_grow_linearly():
    bodies = conversation(60)
    stored = delta.encode(bodies)
    assert stored[0] == bodies[0] and all(b.startswith(b'{"$controlplane":"delta-v1"') for b in stored[1:])
    assert [b.to_bytes() for b in delta.decode(stored)[1:]] == bodies[1:]
    full, compacted = sum(map(len, bodies)), sum(map(len, stored))
    unique = len(bodies[-1])  # the last request holds the system prompt and every message once
    assert full > 20 * unique and compacted < 1.2 * unique, (full, compacted, unique)


def test_another_clients_spacing_rebuilds_the_same_json_value():
    bodies = conversation(6, dumps=lambda v: json.dumps(v).encode())  # ", " and ": " as json.dumps writes them
    rebuilt = delta.decode(delta.encode(bodies))
    assert [json.loads(b if isinstance(b, bytes) else b.to_bytes()) for b in rebuilt] == [json.loads(b) for b in bodies]


def without_what_varies(value: object) -> object:
    """What a key must hash, worked out from the JSON value rather than by cutting bytes: every cache mark and
    metadata object dropped (the tool schema's "metadata" property too), the date, OS version and CLI build of
    the system prompt replaced by placeholders."""
    if isinstance(value, dict):
        return {k: without_what_varies(v) for k, v in value.items() if k not in ("cache_control", "metadata")}
    if isinstance(value, list):
        return [without_what_varies(v) for v in value]
    if isinstance(value, str):
        return (value.replace("Today's date is 2026-11-30", "Today's date is {{date}}")
                .replace("OS Version: Linux 6.1", "OS Version: {{os}}")
                .replace("cc_version=2.1.332.e8f", "cc_version=2.1.332"))
    return value


def test_a_rebuilt_body_has_the_key_of_the_request_it_was_recorded_from():
    bodies = conversation(12)
    expected = [hashlib.sha256(compact(without_what_varies(json.loads(body)))).digest() for body in bodies]
    assert len(set(expected)) == len(bodies)  # each turn its own key: the cuts took nothing that tells turns apart
    rebuilt = delta.decode(delta.encode(bodies))[1:]  # the first is stored whole, the rest as deltas
    assert [body.digest() for body in rebuilt] == expected[1:]
    assert [quick_key("POST", "/v1/messages", body)[2] for body in bodies] == expected
    # The key ignores what varies between runs (date, OS, CLI build, session id, where the cache marks sit)...
    tomorrow = bodies[5].replace(b"2026-11-30", b"2026-12-01").replace(b"Linux 6.1", b"Linux 6.2")
    tomorrow = tomorrow.replace(b"2.1.332.e8f", b"2.1.332.0a1").replace(b"session-5", b"session-x")
    assert quick_key("POST", "/v1/messages", tomorrow) == quick_key("POST", "/v1/messages", bodies[5])
    unmarked = json.loads(bodies[5])
    del unmarked["messages"][-1]["content"][-1]["cache_control"]
    assert quick_key("POST", "/v1/messages", compact(unmarked)) == quick_key("POST", "/v1/messages", bodies[5])
    # ...and nothing else: one character of a tool result, or the path, makes another key.
    changed = bodies[5].replace(b"line 3 ", b"line 4 ", 1)
    assert quick_key("POST", "/v1/messages", changed) != quick_key("POST", "/v1/messages", bodies[5])
    assert quick_key("POST", "/v1/other", bodies[5]) != quick_key("POST", "/v1/messages", bodies[5])


json_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30) | st.sampled_from(
    ["Today's date is 2026-01-02.", "OS Version: Darwin 24", "cc_version=1.2.3.abc", '"cache_control":{}', "},{"])
blocks = st.fixed_dictionaries({"type": st.just("text"), "text": json_text},
                               optional={"cache_control": st.just({"type": "ephemeral"}),
                                         "metadata": st.dictionaries(json_text, json_text, max_size=2)})
messages = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                           "content": st.lists(blocks, min_size=1, max_size=3) | json_text}),
                    min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(history=messages, first=st.integers(1, 6), fields=st.permutations(["model", "messages", "metadata", "system"]))
def test_keying_a_body_by_its_parts_is_keying_its_bytes(history, first, fields):
    """Whatever the messages hold (the cut markers themselves included), and wherever `messages` sits among the
    keys, the key built from the parts of a delta chain is the key of the whole body."""
    values = {"model": "m", "metadata": {"user_id": "u"}, "system": "Today's date is 2026-01-01."}
    bodies = [compact({k: (history[:n] if k == "messages" else values[k]) for k in fields})
              for n in sorted({min(first, len(history)), len(history)})]
    for original, stored in zip(bodies, delta.decode(delta.encode(bodies)), strict=True):
        if isinstance(stored, bytes):
            stored = JsonBody.parse(stored)
        assert stored.to_bytes() == original
        assert stored.digest() == quick_key("POST", "/v1/messages", original)[2]


def test_loading_touches_each_message_once_and_joins_no_body(tmp_path, monkeypatch):
    """Linear load: the bytes cut and hashed while loading stay within a small multiple of the file, and no body
    is joined back together.  Keying every body from its full bytes, as a naive load does, would cut all of
    them: more than 20 times the file here."""
    bodies = conversation(150)
    save(tmp_path, bodies)
    size = (tmp_path / "c.yaml").stat().st_size
    hashed = []
    real_cut = body_module.cut
    monkeypatch.setattr(body_module, "cut", lambda data: hashed.append(len(data)) or real_cut(data))
    monkeypatch.setattr(JsonBody, "to_bytes", lambda self: pytest.fail("a body was joined while loading"))
    loaded = Cassette.load(tmp_path / "c.yaml")
    assert len(loaded.interactions) == 150
    assert sum(hashed) < 3 * size < 20 * size < sum(map(len, bodies)), (sum(hashed), size)


def test_a_side_request_with_another_prompt_does_not_break_the_chain():
    """The CLI asks for a title with another system prompt between two turns: the next turn is still stored
    against the previous turn, not against the side request (which would repeat the whole history)."""
    main, side = conversation(10), conversation(3, system="Write a title for this conversation.")
    interleaved = [main[0], side[0], main[1], side[1], *main[2:6], side[2], *main[6:]]
    stored = delta.encode(interleaved)
    bases = {n: json.loads(b)["base"] for n, b in enumerate(stored) if b.startswith(b'{"$controlplane"')}
    main_positions = [n for n, body in enumerate(interleaved) if body in main]
    assert [bases[n] for n in main_positions[1:]] == main_positions[:-1]
    assert sum(map(len, stored)) < 1.3 * (len(main[-1]) + len(side[-1]))
    decoded = delta.decode(stored)
    assert [b if isinstance(b, bytes) else b.to_bytes() for b in decoded] == interleaved


def test_a_cassette_of_deltas_replays_through_the_quick_index_and_a_full_body_one_still_loads(tmp_path):
    bodies = conversation(8)
    cassette = save(tmp_path, bodies)
    raw = yaml.safe_load(cassette.path.read_text())
    assert "delta-v1" in raw["interactions"][3]["request"]["body"]  # stored as a delta, still a vcrpy body string
    loaded = Cassette.load(cassette.path)
    for number, body in enumerate(bodies):
        assert loaded.find("POST", "/v1/messages", body) == number
        loaded.play(number)
    assert not loaded.normalised_matches
    old = tmp_path / "old.yaml"  # what format 1 wrote: every body in full
    raw["interactions"] = [{**i, "request": {**i["request"], "body": body.decode()}}
                           for i, body in zip(raw["interactions"], bodies, strict=True)]
    old.write_text(yaml.safe_dump(raw))
    assert [i.body for i in Cassette.load(old).interactions] == bodies


@pytest.mark.parametrize("damage, message", [
    (lambda d: d.update(base=99), "is stored as a delta of interaction 99, which is not an earlier Messages API"),
    (lambda d: d.update(keep=500), "interaction 2 is a malformed delta (ValueError: keep=500"),
    (lambda d: d.update(cache_control=[[40, 0, {}]]), "interaction 2 is a malformed delta (IndexError"),
    (lambda d: d.update(order=["model"]), "interaction 2 is a malformed delta (ValueError: key order"),
    (lambda d: d.pop("set"), "interaction 2 is a malformed delta (KeyError: 'set')"),
])
def test_a_damaged_delta_is_a_corrupt_cassette_not_a_wrong_request(tmp_path, damage, message):
    cassette = save(tmp_path, conversation(4))
    raw = yaml.safe_load(cassette.path.read_text())
    stored = json.loads(raw["interactions"][2]["request"]["body"])
    damage(stored)
    raw["interactions"][2]["request"]["body"] = json.dumps(stored)
    cassette.path.write_text(yaml.safe_dump(raw))
    with pytest.raises(CassetteCorrupt) as caught:
        Cassette.load(cassette.path)
    assert message in str(caught.value) and "--agent-mode=record" in caught.value.hint


@pytest.mark.parametrize("dumps, slow", [(compact, False), (lambda v: json.dumps(v).encode(), True)],
                         ids=["compact-json", "spaced-json"])
def test_a_request_matched_only_after_normalising_is_told_apart(tmp_path, dumps, slow):
    """A client that spaces its JSON still replays, but each such hit says it took the slow path."""
    bodies = conversation(3, dumps=dumps)

    def send_all(url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        for body in bodies:
            connection = http.client.HTTPConnection(host, int(port))
            connection.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json"})
            assert connection.getresponse().status == 200
            connection.close()

    with ModelGateway(script=[text("a"), text("b"), text("c")]) as standin:
        with ModelGateway(mode="record", cassette=tmp_path / "c.yaml", upstream=standin.base_url, api_key="k") as rec:
            send_all(rec.base_url)
    with ModelGateway(mode="replay", cassette=tmp_path / "c.yaml") as replay:
        send_all(replay.base_url)
    assert [e.source for e in replay.exchanges] == ["cassette"] * 3
    assert [NORMALISED_MATCH in e.notes for e in replay.exchanges] == [False, slow, slow]  # #0 is stored raw


@pytest.mark.parametrize("raw, order", [
    ('{"a": 1, "messages": [ {"role":"user","content":"x"} , 2 ], "b": {"c": [1,2]} }', ["a", "messages", "b"]),
    ('{"messages":[],"messages":[1]}', ["messages"]),  # a repeated key: the last one, as json.loads reads it
    ('{"messages":[1,]}', None), ('{"messages":[1],}', None), ('{"messages":[,1]}', None),
    ('{"messages":[1]} x', None), ('{"a":1}', None), ("[1]", None),
])
def test_a_stored_body_is_taken_apart_only_if_it_is_a_json_messages_body(raw, order):
    body = JsonBody.parse(raw.encode())
    assert (body and body.order) == order
    if body is not None:
        assert body.value() == json.loads(raw)


class _DenseKeys(ConversationKeys):
    SPACING = 1024  # checkpoints every KB, so that small bodies exercise them


# Mostly long stretches without markers (where checkpoints go), now and then a marker.
pieces = st.sampled_from([b"x" * 700] * 8 + [b"Today's date is 2026-01-02. ", b'"cache_control":{"type":"ephemeral"}',
                                           b',"metadata":{"user_id":"u"}', b"OS Version: Linux 6.1\\n",
                                           b"cc_version=2.1.3.ab;", b","])
edits = st.lists(st.tuples(st.floats(0, 1), st.lists(pieces, max_size=12).map(b"".join)), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(first=st.lists(pieces, min_size=10, max_size=40).map(b"".join), edits=edits)
def test_resuming_from_an_earlier_request_gives_the_key_of_the_whole_body(first, edits):
    """Each request keeps a prefix of an earlier one (any length: a history, a fork, a side request) and adds
    bytes that may hold the cut markers; the resumed key is always the key of the whole body."""
    requests, bodies = _DenseKeys(), [first]
    for fraction, added in edits:
        base = bodies[int(fraction * 997) % len(bodies)]
        bodies.append(base[:int(fraction * len(base))] + added + base[int(fraction * len(base)):][:len(added)])
    for body in bodies:
        assert requests.key("post", "/v1/messages", body) == quick_key("POST", "/v1/messages", body)


def test_a_growing_conversation_is_keyed_for_what_each_request_adds(monkeypatch):
    """O(new bytes) per request: what is scanned stays flat while the bodies grow seven-fold (keying each body
    whole would scan all of it), and every key is still the key of the whole body."""
    bodies = conversation(120)
    expected = [quick_key("POST", "/v1/messages", body) for body in bodies]
    scanned: list[int] = []
    real_found = keys._found
    monkeypatch.setattr(keys, "_found", lambda data, start=0: scanned.append(len(data) - start) or real_found(data, start))
    requests = ConversationKeys()
    assert [requests.key("POST", "/v1/messages", body) for body in bodies] == expected
    # What follows the messages (the system prompt here, ~20 KB) is hashed each time, plus up to two checkpoints'
    # spacing: the first body's size plus that, whatever the turn.
    assert len(bodies[-1]) > 6 * len(bodies[0])
    assert max(scanned[30:]) < len(bodies[0]) + 2 * ConversationKeys.SPACING < len(bodies[-1]) / 2, scanned[-5:]


def test_a_miss_is_diffed_against_the_same_turn_of_a_long_conversation(tmp_path):
    """Ranked by the bytes shared with the request, the diff is against the recording of the same turn, and it
    shows the one changed line, as its changed words (only a shortlist is compared line by line)."""
    bodies = conversation(40)
    loaded = Cassette.load(save(tmp_path, bodies).path)
    changed = bodies[20].replace(b"line 7 ", b"line 7!", 1)
    position, diff = loaded.closest("POST", "/v1/messages", changed)
    assert position == 20
    changed_lines = [line for line in diff.splitlines() if line[:1] in "+-~" and line[:3] not in ("---", "+++")]
    assert len(changed_lines) == 1 and changed_lines[0].startswith('~ "content": "line 7[- -]{+!+}'), diff  # its words
