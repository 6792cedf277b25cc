"""Many clients at once against one gateway: record and replay stay right whatever the arrival order."""

from __future__ import annotations

import random
import threading

import anthropic
import yaml
from standin import StandIn, two_turn_tool_conversation

from pytest_controlplane import ModelGateway

API_KEY = "sk-ant-standin-concurrent-0123"
CLIENTS = 8


def converse(base_url: str, client_number: int) -> list[str]:
    """One agent's two-turn conversation: the tool call it gets, answered, then the final text."""
    client = anthropic.Anthropic(base_url=base_url, api_key="agent-key", max_retries=0)
    messages = [{"role": "user", "content": "Write a note."}]
    kwargs = dict(model="claude-opus-5-5", max_tokens=64, system=f"workspace=/srv/client-{client_number}")
    with client.messages.stream(messages=messages, **kwargs) as events:
        first = events.get_final_message()
    call = first.content[1]
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]}]
    second = client.messages.create(messages=messages, **kwargs)
    return [call.input["path"], second.content[0].text]


def all_at_once(base_url: str, order: list[int]) -> dict[int, list[str]]:
    """Every client in its own thread, released together (a barrier), started in `order`."""
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(order))

    def run(number: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[number] = converse(base_url, number)
        except BaseException as error:  # noqa: BLE001 - reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(n,)) for n in order]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    return results


def expected(number: int) -> list[str]:
    path = f"/srv/client-{number}/notes/hello.txt"
    return [path, f"Done: the note is at {path} and says hello."]


def test_eight_concurrent_clients_record_and_replay_their_own_conversations(tmp_path):
    cassette = tmp_path / "concurrent.yaml"
    with StandIn(two_turn_tool_conversation("write_note", "path", {"text": "hello"}), api_key=API_KEY) as api, \
            ModelGateway(mode="record", cassette=cassette, upstream=api.url, api_key=API_KEY) as gateway:
        recorded = all_at_once(gateway.base_url, list(range(CLIENTS)))
    assert recorded == {n: expected(n) for n in range(CLIENTS)}
    assert len(yaml.safe_load(cassette.read_text())["interactions"]) == 2 * CLIENTS

    for seed in range(3):  # other arrival orders
        order = list(range(CLIENTS))
        random.Random(seed).shuffle(order)
        with ModelGateway(mode="replay", cassette=cassette) as replay:
            replayed = all_at_once(replay.base_url, order)
        assert replayed == recorded
        assert replay.problems == [] and replay.unplayed() == 0
        assert sorted(e.interaction for e in replay.exchanges) == list(range(2 * CLIENTS))


def test_identical_concurrent_requests_each_get_one_recorded_answer(tmp_path):
    """Eight subagents sending the same request: the eight recorded answers are each served exactly once."""
    cassette = tmp_path / "same.yaml"
    answers = iter(range(100))
    lock = threading.Lock()

    def numbered(body):
        with lock:
            return [{"type": "text", "text": f"answer {next(answers)}"}]

    with StandIn(numbered, api_key=API_KEY) as api, \
            ModelGateway(mode="record", cassette=cassette, upstream=api.url, api_key=API_KEY) as gateway:
        first = _same_request_at_once(gateway.base_url)
    with ModelGateway(mode="replay", cassette=cassette) as replay:
        second = _same_request_at_once(replay.base_url)
    assert sorted(first) == sorted(second) == sorted(f"answer {n}" for n in range(CLIENTS))
    assert replay.problems == [] and replay.unplayed() == 0


def _same_request_at_once(base_url: str) -> list[str]:
    texts: list[str] = []
    barrier = threading.Barrier(CLIENTS)

    def run() -> None:
        client = anthropic.Anthropic(base_url=base_url, api_key="agent-key", max_retries=0)
        barrier.wait(timeout=30)
        reply = client.messages.create(model="claude-opus-5-5", max_tokens=64,
                                       messages=[{"role": "user", "content": "Same question."}])
        texts.append(reply.content[0].text)

    threads = [threading.Thread(target=run) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(texts) == CLIENTS
    return texts
