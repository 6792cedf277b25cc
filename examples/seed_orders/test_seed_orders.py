"""The seed's order story, against the order desk: a session looks order 1 up (In Transit), the order is delivered,
and the session is resumed.  Blind, it answers from the record it carries; told what changed, it does not.  The tool's
input names no file: the record's source is orders.json because the tool read it while it ran.  No API key: the
scripted model answers."""

import json

import pytest

from pytest_controlplane import HistoryInconsistent, text, tool_use

LOOK_UP = [tool_use("get_order", {"order_id": "1"}), text("Order 1, the lamp, is In Transit.")]


def write_orders(workspace, status):
    orders = [{"id": "1", "item": "lamp", "status": status}, {"id": "2", "item": "desk", "status": "Pending"}]
    (workspace / "orders.json").write_text(json.dumps(orders, indent=1))


def looked_up_then_delivered(agent_session):
    write_orders(agent_session.workspace, "In Transit")
    agent_session.run("Where is order 1?", session="asha")
    write_orders(agent_session.workspace, "Delivered")  # the order arrives between the sessions


@pytest.mark.agent(script=[*LOOK_UP, text("Not yet: it is In Transit.")])
def test_a_blind_resume_answers_from_the_record_it_carries(agent_session):
    looked_up_then_delivered(agent_session)
    agent_session.resume("Has it arrived yet?", session="asha")
    with pytest.raises(HistoryInconsistent, match=r"stale-resume: .* get_order result of orders.json as it was read "
                                                  r"\(.*In Transit.*\), and orders.json has changed since"):
        agent_session.assert_not_stale()


@pytest.mark.parametrize("prompt", ["Order 1 changed: it is now Delivered. Has it arrived yet?",
                                    "Note: orders.json was updated since we spoke. Has order 1 arrived yet?"],
                         ids=["the new status", "a note of the change"])
@pytest.mark.agent(script=[*LOOK_UP, text("Yes: it was delivered.")])
def test_a_resume_told_what_changed_is_not_stale(agent_session, prompt):
    looked_up_then_delivered(agent_session)
    agent_session.resume(prompt, session="asha")
    agent_session.assert_not_stale()


@pytest.mark.agent(script=[*LOOK_UP, text("It is insured, like every order.")])
def test_a_fork_starts_from_its_parent_and_leaves_it_alone(agent_session):
    write_orders(agent_session.workspace, "In Transit")
    agent_session.run("Where is order 1?", session="asha")
    parent = agent_session.history
    stored = agent_session.transcript_path("asha").read_bytes()
    agent_session.fork("Is it insured?", session="asha", name="asha-2")
    assert agent_session.history[:4] == parent and len(agent_session.history) == 6
    assert agent_session.transcript_path("asha").read_bytes() == stored
    agent_session.assert_consistent("asha")
    agent_session.assert_consistent("asha-2")
