"""A Hypothesis state machine over an agent's sessions: run, crash, resume, fork, edit a file.

    from pytest_controlplane import LoopAgent
    from pytest_controlplane.stateful import SessionMachine

    class MyAgentSessions(SessionMachine):
        def make_agent(self):
            return LoopAgent(my_options)
        tool = ("append", {"path": "log.txt", "line": "step"})   # the call the model makes each turn

    TestMyAgentSessions = MyAgentSessions.TestCase

Invariants, after every step: every stored session is one consistent history (a session whose
last run crashed may hold the tool_use the crash cut off, until it is resumed); a fork never
changes its parent's stored history; a crash loses nothing the session had stored.  The model is
scripted: each prompt gets `tool`, then a text answer.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from .crash import KINDS
from .errors import ConfigError, ControlPlaneError, ours
from .gateway.scripted import ScriptedModel, text, tool_use
from .gateway.server import ModelGateway
from .recovery import lost, stored_history
from .session import AgentSession

__tracebackhide__ = ours  # our errors show without our frames

__all__ = ["SessionMachine"]


class SessionMachine(RuleBasedStateMachine):
    """Subclass it, define `make_agent()` (and `tool`), and collect `YourMachine.TestCase`."""

    sessions = Bundle("sessions")
    tool: tuple[str, dict[str, Any]] = ("Bash", {"command": "echo step >> log.txt"})
    timeout: float = 120

    def make_agent(self) -> Any:
        raise NotImplementedError("Define make_agent() to return the agent under test (ClaudeAgent, LoopAgent, ...).")

    def __init__(self) -> None:
        super().__init__()
        self._root = Path(tempfile.mkdtemp(prefix="controlplane-machine-"))
        self.gateway = ModelGateway(script=ScriptedModel(self._answer))
        self.gateway.open()
        self.session = AgentSession.create(
            self.make_agent(),
            self._root / "world",
            f"machine::{type(self).__name__}",
            gateway=self.gateway,
            timeout=self.timeout,
        )
        self.world = self.session.world
        self.crashed: set[str] = set()
        self.stored: dict[str, Any] = {}  # what each session held after its last step

    def _answer(self, request: Any) -> Any:
        messages = request.json.get("messages", []) if isinstance(request.json, dict) else []
        last = messages[-1].get("content") if messages else ""
        answered = isinstance(last, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last)
        return text("ok") if answered else tool_use(*self.tool)

    def _remember(self, session_id: str) -> None:
        self.stored[session_id] = self._stored(session_id)

    def _stored(self, session_id: str) -> Any:
        return stored_history(self.session.agent, self.session.world, session_id)

    @initialize(target=sessions)
    def start(self) -> str:
        self.session.run("Start the task.")
        session_id = self.session.session_id or self.world.session_id
        self._remember(session_id)
        return session_id

    @rule(session_id=sessions)
    def resume(self, session_id: str) -> None:
        self.session.resume("Carry on.", session=session_id)
        self.crashed.discard(session_id)
        self._remember(session_id)

    @rule(target=sessions, parent=sessions)
    def fork(self, parent: str) -> str:
        before = self._stored(parent)
        self.session.fork("Try another way.", session=parent)
        after = self._stored(parent)
        assert after == before, f"forking changed the parent session {parent}'s stored history"
        child = self.session.session_id
        assert child and child != parent, "the fork did not get a session of its own"
        self._remember(child)
        return child

    @rule(session_id=sessions, point=st.sampled_from([f"{kind} 1" for kind in KINDS] + ["request 2", "tool 2"]))
    def crash(self, session_id: str, point: str) -> None:
        before = self._stored(session_id)
        try:
            self.session.crash("Do one more step.", at=point, session=session_id)
        except ConfigError:
            return  # this agent never passes that point (no session store: no save)
        self.crashed.add(session_id)
        problems = lost(before, self._stored(session_id))
        assert not problems, f"crash at {point} lost stored history of {session_id}: {problems}"

    @rule(content=st.text(alphabet="abc \n", max_size=20))
    def edit_a_file(self, content: str) -> None:
        (self.world.workspace / "notes.txt").write_text(content)

    @invariant()
    def every_session_is_consistent(self) -> None:
        for session_id in list(self.stored):
            stored = self._stored(session_id)
            problems = [
                p
                for p in (stored.check() if stored is not None else [])
                if p.severity == "error" and not (session_id in self.crashed and p.kind == "unanswered-tool-use")
            ]
            assert not problems, f"session {session_id}: " + "; ".join(map(str, problems))

    def teardown(self) -> None:
        try:
            self.gateway.close(save=False)
        except ControlPlaneError:
            pass
        shutil.rmtree(self._root, ignore_errors=True)
