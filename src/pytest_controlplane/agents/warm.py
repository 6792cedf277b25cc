"""Warm agents: one long-lived Claude Code CLI serves many bypass variants in turn, each as a new session.

Most of a variant's cost is the CLI starting (~0.35 s of ~0.5 s here).  A `WarmPool` keeps one CLI process running
(the SDK's `ClaudeSDKClient`, streaming input) in a world of its own, and plays each variant in a clean context, as a
cold run would find it:

- the world is put back before each test (`reset`): the workspace and HOME emptied and seeded again from the test's
  template, what earlier variants left in TMPDIR, the config dir and the world's root (shims, markers, transcripts,
  agent configuration) removed — the CLI's own sockets and state stay;
- the conversation is new (`/clear`: a new session, its own transcript), the permission mode set for the variant;
- the user's options factory is called for each variant, and the CLI's hook and `can_use_tool` calls are routed to
  that variant's callbacks, so what the control plane keeps per session starts fresh, warm as cold;
- whatever the variant started is killed when its run ends (the session reaps the world's new processes).
- a variant that changed settings the CLI watches (the workspace's agent configuration, user settings) leaves
  a CLI that reloads them at some later moment: the next test gets a new CLI (`WarmPool.spoiled`).

What cannot be made clean runs cold, in a process of its own: a variant that plants agent configuration (a poisoned
repository's settings, skills, MCP servers, CLAUDE.md), a test that plants environment variables, a resumed session,
options whose fixed part (everything but the callbacks and the permission mode) differs from the pool's.  A pool is
keyed by that fixed part and by the template's agent configuration and layout (pool_key.py), one per worker process
(so per xdist worker).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cli_facts import MODES_PLAYED_COLD
from ..effects.cli_own import cli_own_tmp
from ..errors import AgentError, ConfigError
from ..tool_call import ToolCall
from .networked import for_pool
from .observer import Checkpoint, Observer, collect, quiet_about_our_callback
from .outcome import RunOutcome
from .pool_key import CONFIGURATION as _CONFIGURATION
from .pool_key import configuration, configuration_files, key
from .settings_summary import configured_mode
from .world import World

# The config dir's own state (kept) and what a session adds (removed between tests).
_CONFIG_KEPT = (".claude.json", "sessions", "shell-snapshots", "plugins", "statsig", "session-env")
_MAX_POOLS = 4  # per process; the least recently used one is closed beyond


class _Loop:
    """An event loop in a thread of its own, where the long-lived client lives; coroutines are sent to it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="controlplane-warm", daemon=True)
        self.thread.start()

    def run(self, coroutine: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class _Routes:
    """The callbacks of the variant now running, where the CLI's hook and permission calls are sent."""

    def __init__(self) -> None:
        self.hooks: dict[tuple[str, int], Callable[..., Any]] = {}
        self.can_use_tool: Callable[..., Any] | None = None
        self.observer: Observer | None = None
        self.stderr: Callable[[str], None] | None = None  # the variant's: its outcome's, and the user's callback


class WarmPool:
    """One long-lived CLI in a world of its own, playing one variant after another (see the module docstring)."""

    def __init__(
        self, agent: Any, root: Path, template: Path | None, *, network: bool = False, trust: str = "owner"
    ) -> None:
        from ..gateway.scripted import ScriptedModel
        from ..gateway.server import ModelGateway
        from .settings_hooks import WorldHooks

        self.world = World.create(root, "controlplane-warm", template=template, trust=trust)
        (self.world.root / "bin").mkdir(exist_ok=True)  # the shims' folder is on PATH from the start
        # The agent configuration the CLI reads as it starts, its command hooks wrapped once and for all: what every
        # test's workspace is given back (see reset).
        WorldHooks.install(self.world)
        self.configuration = configuration_files(self.world.workspace)
        self.gateway = ModelGateway(mode="script", script=ScriptedModel([], then="done"))
        self.gateway.open()
        # A world network for the pool's lifetime, its CLI started inside (agents/networked.py), when asked for.
        self.network = for_pool(self.world, self.gateway.base_url) if network else contextlib.ExitStack()
        self.routes = _Routes()
        self.runs = 0
        self.broken = False
        self._loop = _Loop()
        options = agent.options_for(self.world, self.gateway.base_url, self._dispatch(), RunOutcome(), "", None, False)
        self.key = key(agent, self.world.workspace)
        self.client = self._loop.run(self._connect(options), 60)

    async def _connect(self, options: Any) -> Any:
        from claude_agent_sdk import ClaudeSDKClient

        def stderr(line: str) -> None:
            if self.routes.stderr is not None:
                self.routes.stderr(line)

        # Started in whatever mode the first variant asks for, it must be able to switch to bypassPermissions later.
        extra = {**(options.extra_args or {}), "allow-dangerously-skip-permissions": None}
        client = ClaudeSDKClient(dataclasses.replace(options, stderr=stderr, extra_args=extra))
        with quiet_about_our_callback():
            await client.connect()
        return client

    def _dispatch(self) -> Any:
        """An observer for the pool's options: each hook and callback it is asked to wrap becomes a router to the same
        place in the running variant's options."""
        routes = self.routes
        places: dict[str, int] = {}

        class Router:
            def wrap_hook(self, event: str, callback: Callable[..., Any]) -> Callable[..., Any]:
                place = (event, places.setdefault(event, 0))
                places[event] += 1

                async def routed(data: Any, tool_use_id: str | None, context: Any) -> Any:
                    return await routes.hooks[place](data, tool_use_id, context)

                return routed

            def permission(self, callback: Callable[..., Any] | None, approval: str) -> Callable[..., Any]:
                return self.ask

            async def ask(self, tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
                assert routes.can_use_tool is not None  # the variant's observer's question, answered as it says
                return await routes.can_use_tool(tool_name, tool_input, context)

            async def pre_tool_use(self, data: Any, tool_use_id: str | None, context: Any) -> Any:
                return await routes.observer.pre_tool_use(data, tool_use_id, context) if routes.observer else {}

            async def post_tool_use(self, data: Any, tool_use_id: str | None, context: Any) -> Any:
                return await routes.observer.post_tool_use(data, tool_use_id, context) if routes.observer else {}

            async def post_tool_failure(self, data: Any, tool_use_id: str | None, context: Any) -> Any:
                return await routes.observer.post_tool_failure(data, tool_use_id, context) if routes.observer else {}

        return Router()

    # --- between tests ----------------------------------------------------------------------------

    def spoiled(self) -> bool:
        """Whether an earlier variant changed settings the running CLI watches: its agent configuration in the
        workspace, or user settings in its config dir or HOME.  The CLI reloads them when its watcher notices, at a
        moment nobody controls, and its sandbox's deny list with them (a `.git` that then existed stayed denied in
        the next test), so writing them back would not make it cold again: a new CLI is started instead."""
        world = self.world
        user = [*world.config_dir.glob("settings*.json"), *(world.home / ".claude").glob("settings*.json")]
        return configuration_files(world.workspace) != self.configuration or bool(user)

    def reset(self, template: Path | None) -> None:
        """The world as a new test finds it: the workspace a copy of `template`, nothing any earlier variant left
        (its agent configuration is the pool's, as the CLI read it: a pool whose configuration changed is
        `spoiled`)."""
        world = self.world
        for entry in world.workspace.iterdir():
            if entry.name not in _CONFIGURATION:
                _remove(entry)
        if template is not None:
            for entry in template.iterdir():
                if entry.name not in _CONFIGURATION:
                    target = world.workspace / entry.name
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.copytree(entry, target, symlinks=True)
                    else:
                        shutil.copy2(entry, target, follow_symlinks=False)
        for directory in (world.home, world.root / "bin"):
            _empty(directory)
        for entry in world.root.iterdir():  # shims' records, stand-ins' markers, the recorder's planted list
            if entry.name not in ("workspace", "home", "config", "tmp", "bin", "hooks", "sessions"):
                _remove(entry)
        _remove(world.root / "hooks" / "planted.json")
        for entry in world.config_dir.iterdir():
            if entry.name not in _CONFIG_KEPT:
                _remove(entry)  # transcripts, todos, and agent configuration a variant wrote there
        for entry in world.tmp.iterdir():
            if not cli_own_tmp(entry.name):  # removing the sandbox's mux socket cut off every sandboxed connection
                _remove(entry)
        for top in _listing(world.tmp, "claude-"):  # a finished session's task outputs (claude-*/<project>/*);
            for project in _listing(top):  # the CLI's fswatch-probe-* folders are its own, made and removed any time
                for output in _listing(project) if not project.name.startswith("fswatch-probe") else []:
                    _remove(output)
        _empty(world.session_store_dir)
        self.gateway.exchanges.clear()
        self.gateway.problems.clear()
        self.gateway.observers.clear()
        self.gateway.rewriters.clear()
        self.gateway.interruptions.clear()

    # --- one variant ------------------------------------------------------------------------------

    def play(self, agent: Any, prompt: str, *, timeout: float, checkpoint: Checkpoint | None, mode: str) -> RunOutcome:
        """Run `prompt` as a new session of the running CLI, with this variant's own callbacks (from a fresh call of
        `agent`'s options factory) under permission mode `mode`."""
        outcome = RunOutcome()
        observer = Observer(checkpoint)
        options = agent.options_for(self.world, self.gateway.base_url, observer, outcome, "", None, False)
        routes = self.routes
        routes.hooks = {}
        places: dict[str, int] = {}
        for event, matchers in (options.hooks or {}).items():
            for matcher in matchers:
                for hook in matcher.hooks:
                    if getattr(hook, "__self__", None) is observer:
                        continue  # our own: routed by name
                    place = places.setdefault(event, 0)
                    routes.hooks[(event, place)] = hook
                    places[event] += 1
        routes.can_use_tool, routes.observer, routes.stderr = options.can_use_tool, observer, options.stderr
        calls: dict[str, ToolCall] = {}
        failure: BaseException | None = None
        first = self.runs == 0
        self.runs += 1
        try:
            self._loop.run(self._play(prompt, mode, outcome, calls, first), timeout)
        except Exception as error:  # noqa: BLE001 - described by the adapter, raised by the session
            failure = error
            self.broken = True
        finally:
            routes.observer = routes.stderr = None
        return agent.settled(outcome, observer, calls, failure, timeout)

    async def _play(self, prompt: str, mode: str, outcome: RunOutcome, calls: dict[str, ToolCall], first: bool) -> None:
        client = self.client
        if not first:
            await client.query("/clear")
            async for _ in client.receive_response():
                pass
        await client.set_permission_mode(mode)  # every time: a variant may have moved it (EnterPlanMode)
        await client.query(prompt)
        async for message in client.receive_response():
            collect(message, outcome, calls)
        if outcome.permission_mode not in (None, mode):
            # The switch did not take (every mode, `auto` included, is taken on 2.1.332): not a cold run's result.
            raise AgentError(
                f"the warm CLI began this session in permission mode {outcome.permission_mode!r}, not {mode!r}",
                hint="run cold: `-o agent_warm=false`",
            )

    def close(self) -> None:
        try:
            self._loop.run(self.client.disconnect(), 15)
        except Exception:  # noqa: BLE001 - a CLI that is gone already
            pass
        self._loop.stop()
        self.network.close()
        self.gateway.close(save=False)


def _listing(directory: Path, prefix: str = "") -> list[Path]:
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # the running CLI removes its own at any time
        return [entry for entry in directory.iterdir() if entry.name.startswith(prefix)]
    return []


def _empty(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for entry in directory.iterdir():
        _remove(entry)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


_POOLS: dict[tuple[str, str, bool, str], WarmPool] = {}


def pool_for(
    agent: Any, template: Path | None, base: Path, *, network: bool = False, trust: str = "owner"
) -> WarmPool | None:
    """This process's warm pool for `agent` with the agent configuration of `template` (made if needed, under
    `base`; `network`: in a world network of its own; `trust`: the CLI's view of the workspace, which it keeps from
    its start), reset for a new test; None when the agent cannot run warm (not a ClaudeAgent)."""
    from .claude import ClaudeAgent

    if type(agent) is not ClaudeAgent:
        return None
    try:
        found = (key(agent, base), configuration(template), network, trust)
    except Exception:  # noqa: BLE001 - the factory fails here as it will in the cold run: say it there
        return None
    pool = _POOLS.pop(found, None)
    if pool is not None and (pool.broken or pool.spoiled()):
        pool.close()
        pool = None
    if pool is None:
        if len(_POOLS) >= _MAX_POOLS:
            _POOLS.pop(next(iter(_POOLS))).close()
        root = base / f"pool-{len(os.listdir(base)) if base.is_dir() else 0}"
        pool = WarmPool(agent, root, template, network=network, trust=trust)
    _POOLS[found] = pool  # the most recently used last
    pool.reset(template)
    return pool


def sampled(name: str, every: int = 10) -> bool:
    """Whether `name` (a test and its variant) is in the `--agent-warm-check` sample: one in `every`, the same ones in
    every run and every shard."""
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % every == 0


def close_pools() -> None:
    """Close every pool of this process (at the end of the test session)."""
    while _POOLS:
        _POOLS.popitem()[1].close()


class WarmAgent:
    """A ClaudeAgent whose runs in its pool's world play in the pool's running CLI; any other run (another world, a
    resumed session, options that differ from the pool's fixed part, planted environment variables) runs cold."""

    observes_control_plane = True
    save_points = False
    in_process = False

    def __init__(self, cold: Any, pool: WarmPool) -> None:
        self.cold = cold
        self.pool = pool
        self.permission_modes = cold.permission_modes
        self.timeout = cold.timeout
        self.warm_runs = 0

    def with_permission_mode(self, mode: str) -> WarmAgent:
        return WarmAgent(self.cold.with_permission_mode(mode), self.pool)

    def with_approval(self, approval: str) -> WarmAgent:
        return WarmAgent(self.cold.with_approval(approval), self.pool)  # another pool's key: its runs go cold

    def with_sandbox(self, level: str) -> WarmAgent:
        return WarmAgent(self.cold.with_sandbox(level), self.pool)  # another pool's key: its runs go cold

    @property
    def sandbox_level(self) -> str:
        return str(self.cold.sandbox_level)

    @property
    def approval(self) -> str:
        return str(self.cold.approval)

    def session_id_for(self, name: str) -> str:
        return str(self.cold.session_id_for(name))

    def can_play(self, world: World, resume: str | None) -> bool:
        """Whether this run can play in the pool's CLI: its world, a new session, the pool's options, and a mode a
        CLI switched into behaves in as one started in it (cli_facts.MODES_PLAYED_COLD)."""
        if world.root != self.pool.world.root or resume or world.planted_env or self.pool.broken:
            return False
        try:
            return self.mode(world) not in MODES_PLAYED_COLD and key(self.cold, world.workspace) == self.pool.key
        except Exception:  # noqa: BLE001 - the cold run raises it, with its message
            return False

    def mode(self, world: World) -> str:
        """The mode a cold run of this world starts in: the options', else its settings' `permissions.defaultMode`."""
        options = self.cold.options_factory(world.workspace)
        sources = getattr(options, "setting_sources", None)
        return str(options.permission_mode or configured_mode(world.workspace, world.config_dir, sources))

    def run(self, prompt: str, *, world: World, resume: str | None = None, timeout: float, **rest: Any) -> RunOutcome:
        if not self.can_play(world, resume):
            return self.cold.run(prompt, world=world, resume=resume, timeout=timeout, **rest)
        try:
            mode = self.mode(world)
        except Exception as error:
            raise ConfigError(f"ClaudeAgent's options_factory raised {type(error).__name__}: {error}") from error
        self.warm_runs += 1
        outcome = self.pool.play(self.cold, prompt, timeout=timeout, checkpoint=rest.get("checkpoint"), mode=mode)
        if isinstance(outcome.error, AgentError) and self.pool.broken:
            outcome.error = AgentError(
                f"{outcome.error} (it ran in a warm CLI, which is closed now; the next variant starts a new one)",
                stderr=outcome.stderr,
                hint=outcome.error.hint,
            )
        return outcome

    def transcript(self, world: World, session_id: str) -> Path:
        return self.cold.transcript(world, session_id)

    def history(self, world: World, session_id: str) -> list[dict[str, Any]]:
        return self.cold.history(world, session_id)
