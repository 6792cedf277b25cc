"""Recording from a busy API: 429/529/5xx answers and dropped connections are retried (bounded, honouring
retry-after) and never stored as the answer; a stream cut midway stores nothing and fails clearly."""

from __future__ import annotations

import anthropic
import pytest
import yaml
from standin import StandIn, two_turn_tool_conversation

from pytest_controlplane import ModelGateway
from pytest_controlplane.errors import UpstreamError

API_KEY = "sk-ant-standin-busy-0123456789"
PATH = "/srv/workspace"
CONVERSATION = two_turn_tool_conversation("write_note", "path", {"text": "hello"})


def ask(gateway: ModelGateway, *, stream: bool) -> anthropic.types.Message:
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="agent-key", max_retries=0)
    kwargs = dict(model="claude-opus-5-5", max_tokens=64, system=f"workspace={PATH}",
                  messages=[{"role": "user", "content": "Write a note."}])
    if stream:
        with client.messages.stream(**kwargs) as events:
            return events.get_final_message()
    return client.messages.create(**kwargs)


def stored(cassette) -> list[dict]:
    return yaml.safe_load(cassette.read_text())["interactions"] if cassette.exists() else []


@pytest.mark.parametrize("troubles", [["529", "529"], ["429"], ["503", "drop"], ["drop", "drop"]])
@pytest.mark.parametrize("stream", [True, False])
def test_a_busy_api_is_retried_and_only_the_answer_is_recorded(tmp_path, troubles, stream):
    cassette = tmp_path / "busy.yaml"
    with StandIn(CONVERSATION, api_key=API_KEY, troubles=troubles) as api, \
            ModelGateway(mode="record", cassette=cassette, upstream=api.url, api_key=API_KEY) as gateway:
        message = ask(gateway, stream=stream)
    assert message.content[1].input == {"path": f"{PATH}/notes/hello.txt", "text": "hello"}
    assert len(api.requests) == len(troubles) + 1  # each trouble retried once, then the answer
    assert gateway.problems == []
    [exchange] = gateway.exchanges
    assert len(exchange.notes) == len(troubles) and all(n.startswith(t) or t == "drop" for n, t in
                                                        zip(exchange.notes, troubles))
    [interaction] = stored(cassette)
    assert interaction["response"]["status"]["code"] == 200
    with ModelGateway(mode="replay", cassette=cassette) as replay:  # and it replays
        assert ask(replay, stream=stream).content[1].input == message.content[1].input


def test_an_api_that_stays_busy_fails_with_its_answer_and_records_nothing(tmp_path):
    cassette = tmp_path / "busy.yaml"
    with StandIn(CONVERSATION, api_key=API_KEY, troubles=["529"] * 4) as api, \
            ModelGateway(mode="record", cassette=cassette, upstream=api.url, api_key=API_KEY) as gateway:
        with pytest.raises(anthropic.PermissionDeniedError) as seen:  # a refusal the agent does not retry
            ask(gateway, stream=True)
    assert len(api.requests) == 4
    assert "The upstream API at" in str(seen.value)
    [problem] = gateway.problems
    assert isinstance(problem, UpstreamError)
    assert "answered request #1 with 529" in str(problem) and '"overloaded_error"' in str(problem)
    assert "after 4 attempts: 529" in str(problem) and "nothing was recorded" in str(problem)
    assert "record_errors=True" in problem.hint
    assert not cassette.exists()


def test_a_stream_cut_midway_is_not_retried_and_records_nothing(tmp_path):
    cassette = tmp_path / "cut.yaml"
    with StandIn(CONVERSATION, api_key=API_KEY, troubles=["cut"]) as api, \
            ModelGateway(mode="record", cassette=cassette, upstream=api.url, api_key=API_KEY) as gateway:
        with pytest.raises(anthropic.PermissionDeniedError):
            ask(gateway, stream=True)
    assert len(api.requests) == 1
    [problem] = gateway.problems
    assert "cut its answer to request #1 midway (200," in str(problem)
    assert "the stream is incomplete, so nothing was recorded" in str(problem)
    assert not cassette.exists()


def test_an_error_answer_is_recorded_when_the_test_asks_for_it(tmp_path):
    cassette = tmp_path / "refused.yaml"
    with StandIn(CONVERSATION, api_key="another-key") as api, \
            ModelGateway(mode="record", cassette=cassette, upstream=api.url, api_key=API_KEY,
                         record_errors=True) as gateway:
        with pytest.raises(anthropic.AuthenticationError):
            ask(gateway, stream=False)
    assert gateway.problems == []
    [interaction] = stored(cassette)
    assert interaction["response"]["status"]["code"] == 401


BUSY_TEST = '''
import anthropic


def test_ask(model_gateway):
    client = anthropic.Anthropic(base_url=model_gateway.base_url, api_key="agent-key", max_retries=0)
    try:
        client.messages.create(model="claude-opus-5-5", max_tokens=64, system="workspace=/srv/workspace",
                               messages=[{"role": "user", "content": "Write a note."}])
    except anthropic.APIStatusError:
        pass  # the agent sees the refusal; the test fails with the upstream's answer
'''


@pytest.mark.parametrize(("mode", "trouble"), [("record", "busy"), ("record", "refused"), ("auto", "refused"),
                                              ("live", "busy")])
def test_every_forwarding_mode_shows_the_upstreams_status_and_body_and_stores_nothing(pytester, monkeypatch, mode,
                                                                                      trouble):
    pytester.makepyfile(test_busy=BUSY_TEST)
    key = API_KEY if trouble == "busy" else "a-key-the-upstream-refuses"
    with StandIn(CONVERSATION, api_key=API_KEY, troubles=["529"] * 4 if trouble == "busy" else []) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
        result = pytester.runpytest(f"--agent-mode={mode}", f"--agent-upstream={api.url}")
    result.assert_outcomes(passed=1, errors=1)
    if trouble == "busy":
        result.stdout.fnmatch_lines([
            f"*UpstreamError: The upstream API at {api.url} answered request #1 with 529*"
            '*"overloaded_error"*after 4 attempts: 529*',
            "*The API stayed busy through every retry: run again later*record_errors=True*",
        ])
    else:
        result.stdout.fnmatch_lines([
            f"*UpstreamError: The upstream API at {api.url} answered request #1 with 401*"
            '*"authentication_error"*invalid x-api-key*',
            "*Check ANTHROPIC_API_KEY (or the stand-in's key) and `--agent-upstream`*",
        ])
    assert ("nothing was recorded" in result.stdout.str()) == (mode != "live")
    assert not (pytester.path / "cassettes").exists()
