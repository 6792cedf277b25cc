"""Acceptance tests of the cache-investigation agent's sessions: resume, fork, staleness, no leaked secret.

Replayed from cassettes in `make demo`; the requests the model received are the evidence.
"""

import json

import pytest

from pytest_controlplane import StaleSession, fork_session, resume_session, start_fresh_with_summary

LOCKED = """
import threading

_lock = threading.Lock()
"""


def tool_calls(messages):
    return [b for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]


@pytest.fixture
def investigated(agent_kwargs):
    answer, messages = resume_session("cache-investigation", "Investigate cache.py.", **agent_kwargs)
    assert "TTL cache" in answer
    assert [c["input"] for c in tool_calls(messages)] == [{"path": "cache.py"}]
    return messages


def test_resume_answers_the_follow_up_without_reading_again(investigated, agent_kwargs, model_gateway):
    answer, messages = resume_session("cache-investigation", "Is it thread-safe?", **agent_kwargs)
    assert answer.startswith("No: get and set change the dict without a lock")
    assert len(tool_calls(messages)) == 1  # still only the first read
    follow_up = model_gateway.requests[-1].json
    assert follow_up["messages"][:len(investigated)] == investigated  # the model saw the whole session


def test_forks_diverge_and_never_touch_each_other(investigated, agent_kwargs, store):
    parent = store.path("cache-investigation").read_bytes()
    fork_session("cache-investigation", "cache-investigation-thread-safety", store=store)
    fork_session("cache-investigation", "cache-investigation-ttl", store=store)
    safety, safety_messages = resume_session("cache-investigation-thread-safety", "Propose a fix.", **agent_kwargs)
    ttl, ttl_messages = resume_session("cache-investigation-ttl", "When do entries expire?", **agent_kwargs)
    assert "threading.Lock" in safety and "ttl seconds" in ttl
    assert ttl_messages[:len(investigated)] == safety_messages[:len(investigated)] == investigated
    assert "When do entries expire?" not in json.dumps(safety_messages)
    assert "Propose a fix." not in json.dumps(ttl_messages)
    assert store.path("cache-investigation").read_bytes() == parent
    assert store.names() == ["cache-investigation", "cache-investigation-thread-safety", "cache-investigation-ttl"]


def test_a_changed_file_makes_a_blind_resume_stale(investigated, agent_kwargs, project, store):
    (project / "cache.py").write_text(LOCKED + (project / "cache.py").read_text())
    with pytest.raises(StaleSession, match=r"cache.py \(changed\)"):
        resume_session("cache-investigation", "Is it thread-safe?", **agent_kwargs)
    assert store.load("cache-investigation") == investigated  # nothing was saved


def test_an_informed_resume_carries_the_new_contents(investigated, agent_kwargs, project, model_gateway):
    (project / "cache.py").write_text(LOCKED + (project / "cache.py").read_text())
    answer, _ = resume_session("cache-investigation", "Is it thread-safe?", on_stale="inform", **agent_kwargs)
    sent = model_gateway.requests[-1].last_user_text
    assert "cache.py now reads:" in sent and "_lock = threading.Lock()" in sent
    assert answer.startswith("Yes")


def test_a_fresh_start_with_summary_carries_the_new_contents(investigated, agent_kwargs, project, model_gateway):
    (project / "cache.py").write_text(LOCKED + (project / "cache.py").read_text())
    answer, messages = resume_session("cache-investigation", "Is it thread-safe?", on_stale="fresh", **agent_kwargs)
    sent = model_gateway.requests[-1].json["messages"]
    assert len(sent) == 1  # a new conversation...
    assert sent[0]["content"].startswith("Summary of the earlier session:\ncache.py is a TTL cache")  # ...from a summary
    assert "_lock = threading.Lock()" in sent[0]["content"]
    assert answer.startswith("Yes")


def test_a_summary_alone_starts_a_new_session(agent_kwargs, store):
    answer, messages = start_fresh_with_summary("cache.py is a TTL cache over a dict.", "Is it thread-safe?",
                                                name="cache-brief", **agent_kwargs)
    assert answer.startswith("No") and store.load("cache-brief") == messages


def test_the_config_token_never_reaches_the_model(agent_kwargs, project, model_gateway):
    canary = "cp-canary-5f0c2b7e"  # fixed, not random: a recorded and a replayed run must agree
    with open(project / "cache_config.ini", "a") as config:
        config.write(f"api_token = {canary}\n")
    answer, _ = resume_session("cache-config", "Check the config.", **agent_kwargs)
    assert "ttl = 30" in answer
    sent = json.dumps([e.request.json for e in model_gateway.exchanges])
    assert "api_token = <redacted>" in sent
    assert canary not in sent
