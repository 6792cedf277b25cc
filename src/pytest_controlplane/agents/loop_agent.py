"""LoopAgent: an in-process agent loop on the Anthropic Python SDK (ours or the user's), through the gateway.

    LoopAgent(lambda workspace: {"system": SYSTEM, "tools": TOOLS, "tool_impls": make_tools(workspace)})

Each agent_session run is `resume_session` on the world's SessionStore: run() starts a session
named after the session id, resume() continues one, fork() copies it first.  The loop runs in a
thread with ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY pointing at the gateway for the run's duration.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import AgentError, ConfigError, ours
from ..loop.agent_loop import run_agentic_loop
from ..loop.sessions import ON_STALE, OnStale, resume_session
from ..loop.store import SessionStore
from .outcome import RunOutcome
from .world import DUMMY_API_KEY, World, check_takes_workspace

__tracebackhide__ = ours  # our errors show without our frames

_env_lock = threading.Lock()


class LoopAgent:
    """`options_factory(workspace) -> dict` of the loop's keyword arguments (system, tools, tool_impls, ...)."""

    observes_control_plane = False  # tool calls are read off the model's exchanges
    in_process = True  # crash tests stop it with a SimulatedCrash, not a signal
    save_points = False

    def __init__(
        self,
        options_factory: Callable[[Path], Mapping[str, Any]],
        *,
        loop: Callable[..., Any] | None = None,
        on_stale: OnStale = "raise",
        reading_tools: Iterable[str] | Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> None:
        check_takes_workspace(options_factory, "LoopAgent", "dict")
        if on_stale not in ON_STALE:
            raise ConfigError(f"LoopAgent(on_stale={on_stale!r}): choose one of {', '.join(ON_STALE)}.")
        self.options_factory = options_factory
        self.loop = loop or run_agentic_loop
        self.on_stale = on_stale
        self.reading_tools = reading_tools
        self.timeout = timeout
        self._clients: dict[str, Any] = {}

    def store(self, world: World, crash: Any = None) -> SessionStore:
        return SessionStore(
            world.session_store_dir,
            root=world.workspace,
            reading_tools=self.reading_tools,
            before_replace=crash.on_save if crash is not None else None,
        )

    def run(
        self,
        prompt: str,
        *,
        world: World,
        base_url: str,
        session_id: str,
        resume: str | None = None,
        fork: bool = False,
        timeout: float,
        crash: Any = None,
    ) -> RunOutcome:
        """`crash`: a crash test's Crasher, told of every tool call and session save (it may stop the run there)."""
        store = self.store(world, crash)
        name = session_id if resume is None or fork else resume
        outcome = RunOutcome(session_id=name)
        options = dict(self.options_factory(world.workspace))
        if self.loop is run_agentic_loop and "client" not in options:
            options["client"] = self._client(base_url)
        if crash is not None and options.get("tool_impls"):
            options["tool_impls"] = {name: _told(crash, impl) for name, impl in options["tool_impls"].items()}
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                if fork:
                    store.fork(resume, name)  # type: ignore[arg-type]
                box["result"] = resume_session(
                    name, prompt, store=store, loop=self.loop, on_stale=self.on_stale, **options
                )
            except BaseException as error:  # noqa: BLE001 - handed to the session (a SimulatedCrash too)
                box["error"] = error

        with _agent_env(base_url, world.extra_env(os.environ.get("PATH", ""))):
            thread = threading.Thread(target=work, name="controlplane-loop-agent", daemon=True)
            thread.start()
            thread.join(timeout)
        if thread.is_alive():
            outcome.error = AgentError(
                f"The agent loop did not finish within {timeout:g} s; its thread is abandoned (an in-process agent "
                "cannot be killed).",
                hint="A tool that hangs is the usual cause; raise the limit with @pytest.mark.agent(timeout=...) if "
                "the run is just long.",
            )
        elif "error" in box:
            outcome.error = box["error"]
        else:
            outcome.result, outcome.messages = box["result"]
        return outcome

    def _client(self, base_url: str) -> Any:
        """One anthropic client per gateway (making one costs ~20 ms: its TLS context), for the reference loop."""
        if base_url not in self._clients:
            import anthropic

            self._clients[base_url] = anthropic.Anthropic(base_url=base_url, api_key=DUMMY_API_KEY, max_retries=0)
        return self._clients[base_url]

    def transcript(self, world: World, session_id: str) -> Path:
        return self.store(world).path(session_id)

    def history(self, world: World, session_id: str) -> list[dict[str, Any]]:
        return self.store(world).load(session_id) or []


def _told(crash: Any, impl: Callable[..., Any]) -> Callable[..., Any]:
    def tool(*args: Any, **kwargs: Any) -> Any:
        crash.on_tool(in_process=True)
        return impl(*args, **kwargs)

    return tool


@contextlib.contextmanager
def _agent_env(base_url: str, planted: Mapping[str, str]) -> Iterator[None]:
    """Point the SDK's environment at the gateway (and add what was planted) for one run, then put it back."""
    values = {**planted, "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": DUMMY_API_KEY}
    with _env_lock:
        saved = {key: os.environ.get(key) for key in values}
        os.environ.update(values)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
