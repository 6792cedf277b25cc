"""AgentSession: the user's agent run in an isolated world, and everything that happened.

    session.run("Tidy up the repo")
    assert not (session.workspace / ".env").exists()
    assert session.tool_calls[0].verdict == "denied_by_hook"

Crash tests live in crash.py and bypass attempts in bypass/; the session is what they drive.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .agents.adapter import AgentAdapter, store_reader
from .agents.hook_faults import carry_fault
from .agents.hook_runs import HookListener, credit, log_size, read_runs
from .agents.networked import world_network
from .agents.outcome import RunOutcome, calls_seen_by_model, raise_for
from .agents.process import detached, process_ids, reap
from .agents.sandbox import warn_if_not_running
from .agents.settings_hooks import RECORDER, CommandHook, Restorer, WorldHooks
from .agents.world import World
from .crash import Crashes
from .effects import Effects
from .effects.attribution import HookWindow
from .errors import AgentError, ConfigError, ours
from .gateway.scripted import Block, ScriptedModel, text
from .gateway.server import ModelGateway
from .session_names import resolve, resumable
from .staleness import Staleness
from .tool_call import ToolCall

__tracebackhide__ = ours  # our errors show without our frames


DEFAULT_TIMEOUT = 120.0
# worlds(): a label and what ran there: tool calls, effects, hook-made effects, hook runs, egress
Seen = tuple[str, list[ToolCall], list[Any], list[Any], list[Any], list[Any]]


class AgentSession(Crashes, Staleness):
    """One test's agent: run, resume, fork, attempt — and what the model, tools and files saw.

    Seconds per run: `timeout` (the test's marker), else the adapter's own `timeout`, else
    `default_timeout` (the ini option agent_timeout), else 120.
    """

    def __init__(
        self,
        agent: AgentAdapter,
        world: World,
        gateway: ModelGateway,
        *,
        timeout: float | None = None,
        default_timeout: float | None = None,
        plantings: Any = None,
    ) -> None:
        if not isinstance(agent, AgentAdapter):
            raise ConfigError(
                f"The agent fixture returned {agent!r}, which is not an agent adapter.",
                hint="Return ClaudeAgent(options_factory) or CommandAgent(argv) from your `agent` fixture.",
            )
        self.agent = agent
        self.world = world
        self.gateway = gateway
        self.timeout = timeout or getattr(agent, "timeout", None) or default_timeout or DEFAULT_TIMEOUT
        self.runs: list[RunOutcome] = []
        self._isolated = 0
        self.scratch: Path | None = None  # where isolated() makes its worlds (by default beside this one)
        self.warm_check: Callable[[Any], bool] = lambda variant: False  # play this warm variant cold too, and compare
        self.crasher: Any = None  # set by crash.py while a crash test runs: it stops the agent at its point
        self.bypass_outcomes: list[Any] = []  # every variant attempted (the report shows them)
        self.everyday_before = ("", "")  # before an everyday task ran: the commit HEAD named, the domain allowed
        self.inconclusive_policy = "fail"  # or "warn": what assert_held() does with an inconclusive variant
        self.crash_reports: list[Any] = []
        self.settings_files: list[Any] = []  # the world's settings files at the last run, with their command hooks
        self.names: dict[str, str] = {}  # the sessions a test named: name -> the agent's id for it
        self._started: list[str] = []  # the id of each new session (or fork) a run started, crashed or not
        self.elsewhere: list[Seen] = []  # what ran in the isolated worlds made from this one (see worlds())
        from .canary import Plantings

        self.plantings = plantings if plantings is not None else Plantings(env=world.planted_env)
        self.effects = Effects.of_world(world, self.plantings.secrets)
        gateway.set_roots(world.roots)
        gateway.observers.append(self._request_arrived)
        self._restorer = Restorer(world)  # the hook recorder's command lines, put back to the user's own
        gateway.rewriters.append(self._restorer.body)

    @property
    def warm(self) -> bool:
        """Whether the agent plays in a long-lived CLI whose world this is (agents/warm.py)."""
        pool = getattr(self.agent, "pool", None)
        return pool is not None and pool.world.root == self.world.root

    @classmethod
    def create_warm(
        cls,
        agent: Any,
        pool: Any,
        test_id: str,
        *,
        scratch: Path,
        plantings: Any = None,
        timeout: float | None = None,
        default_timeout: float | None = None,
        inconclusive_policy: str = "fail",
    ) -> AgentSession:
        """`agent` played in `pool`'s running CLI, in the pool's world (reset for this test), against its gateway."""
        from .agents.warm import WarmAgent
        from .canary import Plantings

        plantings = plantings if plantings is not None else Plantings()
        # The pool's directories under this test's name (its ids and canaries are the test's, as in a cold run);
        # variables planted later land in its environment too, and the run goes cold.
        world = dataclasses.replace(pool.world, test_id=test_id, planted_env=plantings.env)
        plantings.workspace = world.workspace
        warm: Any = WarmAgent(agent, pool)
        session = cls(warm, world, pool.gateway, timeout=timeout, default_timeout=default_timeout, plantings=plantings)
        session.inconclusive_policy = inconclusive_policy
        session.scratch = scratch
        return session

    @classmethod
    def create(
        cls,
        agent: Any,
        root: Path,
        test_id: str,
        *,
        gateway: ModelGateway,
        template: Path | None = None,
        plantings: Any = None,
        timeout: float | None = None,
        default_timeout: float | None = None,
        inconclusive_policy: str = "fail",
        trust: str = "owner",
    ) -> AgentSession:
        """`agent` in a new world at `root` (its workspace a copy of `template`, if given), against `gateway`;
        `plantings`: what the test's canaries planted (their environment variables reach the agent); `trust`: how the
        Claude Code CLI sees the workspace, "owner" (trusted) or "clone" (`--workspace-trust`)."""
        from .canary import Plantings

        plantings = plantings if plantings is not None else Plantings()
        world = World.create(root, test_id, template=template, planted_env=plantings.env, trust=trust)
        plantings.workspace = world.workspace
        session = cls(agent, world, gateway, timeout=timeout, default_timeout=default_timeout, plantings=plantings)
        session.inconclusive_policy = inconclusive_policy
        return session

    def _request_arrived(self, request: Any) -> None:
        if request.route == "/v1/messages":
            self.effects.checkpoint("request", request.index)
            if self.crasher is not None:
                self.crasher.on_request(request)

    def _checkpoint(self, kind: str, ref: Any = None, call: Any = None) -> None:
        """ClaudeAgent's own hooks: snapshot around each tool call, and stop the run there in a crash test."""
        self.effects.checkpoint(kind, ref, call)
        if kind == "pre" and self.crasher is not None:
            from .crash import wait_until_recorded

            self.crasher.on_tool(in_process=False, settle=lambda: wait_until_recorded(self.world, str(ref)))

    def _hook(self, message: dict[str, Any]) -> None:
        """The recorder's word that a command hook starts or has ended (hook_runs.HookListener): snapshot, and say
        whether what changes meanwhile is the hook's (no process the agent detached from its own tree is alive)."""
        hook = CommandHook.from_spec(message.get("hook") or {})
        alone = not detached(self.world.root, RECORDER.name)
        if message.get("phase") == "start":
            window = HookWindow(hook.label, hook.event, str(message.get("tool_use_id") or ""), not hook.planted, alone)
            self.effects.hook_started(message.get("id"), window)
        else:
            self.effects.hook_ended(message.get("id"), credited=alone)

    def kill_agent(self) -> None:
        """SIGKILL every process of this world (the CLI, a command agent, the tools they started)."""
        reap(self.world.root)

    # --- driving the agent ---------------------------------------------------------------------

    @property
    def workspace(self) -> Path:
        return self.world.workspace

    def turn(
        self, prompt: str, *, resume: str | None = None, fork: bool = False, name: str | None = None
    ) -> RunOutcome:
        """One run of the agent on `prompt`: in a new session (called `name`, if given), or continuing (`fork`:
        branching into a new one) `resume`, a session's id or the name a test gave it."""
        resume = resumable(self, resume) if resume is not None else None
        session_id = self.world.session_id if not self.runs else f"{self.world.session_id[:-4]}{len(self.runs):04x}"
        if name is not None:  # a CommandAgent is given the name itself; ClaudeAgent a UUID made from it
            session_id = getattr(self.agent, "session_id_for", lambda named: named)(name)
        self._started += [session_id] if resume is None or fork else []
        before, self.gateway.cut_short = len(self.gateway.exchanges), False
        observes = getattr(self.agent, "observes_control_plane", True)
        # Adapters that see tool calls happen (ClaudeAgent) snapshot around each; for the others the
        # gateway's checkpoint at each model request brackets the calls of the answer before it.
        extra: dict[str, Any] = {"checkpoint": self._checkpoint} if observes else {}
        if self.crasher is not None:
            extra.update(self.crasher.arm())
        # The world's settings files run each command hook through the recorder during the run (settings_hooks.py);
        # the listener hears each hook start and end, so the effects oracle can tell its writes from the tool call's.
        settings = WorldHooks.install(self.world)
        self.settings_files = settings.files
        logged = log_size(self.world)
        in_process = getattr(self.agent, "in_process", False)
        listening = contextlib.nullcontext() if in_process else HookListener(self.world, self._hook)
        self.effects.begin()
        alive_before = process_ids()
        outcome = None
        try:
            with listening, world_network(self.world, self.gateway.base_url):
                outcome = self.agent.run(
                    prompt,
                    world=self.world,
                    base_url=self.gateway.base_url,
                    session_id=session_id,
                    resume=resume,
                    fork=fork,
                    timeout=self.timeout,
                    **extra,
                )
        finally:
            stray = reap(self.world.root, besides=alive_before)  # nothing the agent started outlives its run
            if self.crasher is not None:
                self.crasher.ran()
            if outcome is not None:
                self._settle(outcome, before, logged, settings.files, observes)
                outcome.resumed = resume
            self.effects.end(
                outcome.tool_calls if outcome else (),
                self.gateway.exchanges[before:],
                first_number=len(self.tool_calls) + 1,
            )
            self.effects.record_egress(*self.world.network.last_run())
            if not self.warm:
                settings.restore()  # a warm CLI read them wrapped when it started: they stay so (agents/warm.py)
        outcome.stray_processes = stray
        self.runs.append(outcome)
        if name is not None:
            self.names[name] = outcome.session_id or session_id  # what the agent really called it (a fork's new id)
        raise_for(outcome, self.gateway.take_problem(), answered=len(self.gateway.exchanges) > before)
        return outcome

    def _settle(self, outcome: RunOutcome, before: int, logged: int, files: list[Any], observes: bool) -> None:
        """A run's tool calls as the model saw them (an agent seen from outside), with what its command hooks decided,
        the user's own command lines put back in their words, and who decided each (layers.py)."""
        if not observes:
            outcome.tool_calls = calls_seen_by_model(self.gateway.exchanges[before:])
        outcome.first_exchange = before
        outcome.hook_runs = read_runs(self.world, logged)
        for call in outcome.tool_calls:
            call.result, call.reason = self._restorer.text(call.result), self._restorer.text(call.reason)
        credit(outcome.tool_calls, outcome.hook_runs, files, outcome.permission_mode)
        warn_if_not_running(outcome.sandbox)

    def run(self, prompt: str, *, session: str | None = None) -> RunOutcome:
        """Run the agent on `prompt` in a new session; `session="asha-case"` names it, for resume and fork by name."""
        return self.turn(prompt, name=session)

    def resume(self, prompt: str, session: str | None = None) -> RunOutcome:
        """Continue a session (by its name or id; the last one by default) with `prompt`."""
        return self.turn(prompt, resume=session or self._last_session())

    def fork(self, prompt: str, session: str | None = None, *, name: str | None = None) -> RunOutcome:
        """Branch a session (by its name or id; the last one by default) into a new one, called `name` if given, and
        run `prompt` there."""
        return self.turn(prompt, resume=session or self._last_session(), fork=True, name=name)

    def attempt(self, call: Any, *, prompt: str = "Do as instructed.", permission_modes: Sequence[str] = ()) -> Any:
        """Have the model emit exactly `call`, then end the turn; the real control plane judges it.

        `call` is a `tool_use(...)` block (returns the ToolCall with its verdict), a bypass variant (plays its setup
        calls first; returns a BypassOutcome judged by the effect), or the `offered-tools` sweep (a SweepOutcome).  With
        `permission_modes=["default", "acceptEdits", ...]` a variant (each variant the sweep builds) runs once per
        mode, each from a copy of the workspace as it is now, and `assert_held()` also fails when the verdicts
        differ.
        """
        from .bypass.attempt import attempt_variant
        from .bypass.sweep import OfferedRoutes, sweep
        from .bypass.variant import Variant

        if isinstance(call, Variant):
            return attempt_variant(self, call, prompt, permission_modes)
        if isinstance(call, OfferedRoutes):
            return sweep(self, call, prompt, permission_modes)
        if permission_modes:
            raise ConfigError("attempt(..., permission_modes=...) takes a bypass variant or the offered-tools sweep.")
        if not isinstance(call, Block) or call.type != "tool_use":
            raise ConfigError(f"attempt() takes a tool_use(...) block or a bypass variant, got {call!r}.")
        self.gateway.use_script(ScriptedModel([call, text("done")]))
        outcome = self.run(prompt)
        matching = [c for c in outcome.tool_calls if c.name == call.name]
        if not matching:
            raise AgentError(
                f"The agent never surfaced the scripted {call.name} call.",
                hint="The agent must hand the model's tool_use to its tools (or refuse it): check that it offers "
                f"{call.name} and does not end its turn without answering the call.",
            )
        return matching[0]

    @contextlib.contextmanager
    def isolated(self, *, permission_mode: str | None = None, approval: str | None = None) -> Iterator[AgentSession]:
        """A session of the same agent in a new world whose workspace starts as a copy of this one's (for
        Hypothesis examples, one run per permission mode, or the same attempt with a yes at the approval prompt); it
        shares this test's gateway."""
        self._isolated += 1
        root = (self.scratch or self.world.root.parent) / f"{self.world.root.name}-isolated-{self._isolated}"
        here = self.world
        world = World.create(
            root, here.test_id, template=here.workspace, planted_env=here.planted_env, trust=here.trust
        )
        world.network.wanted = here.network.wanted
        carry_fault(here, world)  # a hook fault armed here is armed there too (agents/hook_faults.py)
        agent = self.agent
        if permission_mode is not None:
            if not hasattr(agent, "with_permission_mode"):
                raise ConfigError(
                    f"{type(agent).__name__} has no permission modes; differential runs need a ClaudeAgent."
                )
            agent = agent.with_permission_mode(permission_mode)
        if approval is not None:
            agent = agent.with_approval(approval)
        session = AgentSession(agent, world, self.gateway, timeout=self.timeout, plantings=self.plantings)
        label = f"mode {permission_mode}" if permission_mode else f"world {self._isolated}"
        try:
            yield session
        finally:
            self.elsewhere += [(", ".join(filter(None, (label, w))), *seen) for w, *seen in session.worlds()]  # type: ignore[misc]
            self.gateway.observers.remove(session._request_arrived)
            self.gateway.rewriters.remove(session._restorer.body)
            self.gateway.set_roots(self.world.roots)

    def _last_session(self) -> str:
        if found := next((o.session_id for o in reversed(self.runs) if o.session_id), None):
            return found
        raise ConfigError("Nothing to resume: call session.run(...) first.")

    def _session(self, session: str | None) -> str:
        """The agent's id for `session` (a name the test gave, or an id the agent ran or stored; None: the last)."""
        return self._last_session() if session is None else resolve(self, session)

    # --- what happened -------------------------------------------------------------------------

    @property
    def requests(self) -> list[Any]:
        """Every request the model received, parsed (JSON bodies)."""
        return [e.request.json for e in self.gateway.exchanges]

    @property
    def responses(self) -> list[Any]:
        from .wire import assemble_message

        return [assemble_message(e.response) for e in self.gateway.exchanges]

    @property
    def messages(self) -> list[Any]:
        return [m for outcome in self.runs for m in outcome.messages]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [c for outcome in self.runs for c in outcome.tool_calls]

    def worlds(self) -> list[Seen]:
        """What ran here ("") and in each isolated world made from this one (a mode each, a cold play), labelled: its
        tool calls, effects, hook-made effects, hook runs and egress, so that a report shows them where they ran."""
        here = ("", self.tool_calls, self.effects.diff, self.effects.by_hooks, self.hook_runs, self.effects.egress)
        return [here, *self.elsewhere]

    @property
    def hook_runs(self) -> list[Any]:
        """Every run of a command hook from the world's settings (HookRun: the hook, its input, its decision)."""
        return [r for outcome in self.runs for r in outcome.hook_runs]

    @property
    def result(self) -> Any:
        return self.runs[-1].result if self.runs else None

    @property
    def session_id(self) -> str | None:
        return self.runs[-1].session_id if self.runs else None

    def transcript_path(self, session: str | None = None) -> Path:
        """The file the session (a name the test gave it or its id; the last one by default) is stored in."""
        return store_reader(self.agent, "transcript")(self.world, self._session(session))

    @property
    def history(self) -> list[dict[str, Any]]:
        """The last session as the agent stored it (Claude: the JSONL transcript, assistant lines merged by
        message id; LoopAgent: the saved messages)."""
        return store_reader(self.agent, "history")(self.world, self._last_session())
