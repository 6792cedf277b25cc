"""ClaudeAgent: the user's claude-agent-sdk agent, run through the real Claude Code CLI (the bundled one, unless
another is chosen: clis/).

The adapter never changes what the user's control plane decides: it wraps their hook and
can_use_tool callbacks only to see their verdicts, and adds hooks of its own (PreToolUse,
PostToolUse, PostToolUseFailure, all returning nothing) to see which tool calls really ran and
to snapshot the filesystem just before and after each.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import importlib.util
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..cli_facts import PERMISSION_MODES, PROMPT_ONLY_TOOLS
from ..clis.choice import Cli, bundled, choose, default
from ..errors import AgentError, ConfigError, ours
from ..tool_call import ToolCall
from .networked import launcher
from .observer import Checkpoint, Observer, collect, quiet_about_our_callback
from .outcome import RunOutcome
from .process import describe_exit, stderr_tail
from .sandbox import configured, mark, strict
from .world import World, check_takes_workspace

SANDBOX_LEVELS = ("off", "configured", "strict")  # the audit's sandbox axis (with_sandbox)
# The answer at the CLI's approval prompt: nobody's (the call is `asked`), or a person's yes.
APPROVALS = ("deny", "allow")

__tracebackhide__ = ours  # our errors show without our frames


def _chosen_by_header(env: dict[str, str], cli: Cli) -> dict[str, str]:
    """A CLI chosen on purpose says who chose it in a header of each request it sends: a replay may then match a
    cassette recorded on another release by its conversation (gateway/releases.py).  The default CLI sends none."""
    from ..clis.choice import DEFAULT
    from ..wire import CHOSEN_BY_HEADER

    if cli.chosen_by == DEFAULT:
        return {}
    headers = [line for line in env.get("ANTHROPIC_CUSTOM_HEADERS", "").splitlines() if line.strip()]
    return {"ANTHROPIC_CUSTOM_HEADERS": "\n".join([*headers, f"{CHOSEN_BY_HEADER}: {cli.chosen_by}"])}


def _recorded_settings(options: Any, world: World) -> dict[str, Any]:
    """`settings=` and `plugins=` of the options with their command hooks run through the recorder (settings_hooks)."""
    from .settings_hooks import wrapped_flag_settings, wrapped_plugin

    changes: dict[str, Any] = {}
    if isinstance(options.settings, str) and options.settings.strip():
        changes["settings"] = wrapped_flag_settings(options.settings, world)[0]
    if options.plugins:
        changes["plugins"] = [
            {**plugin, "path": wrapped_plugin(str(plugin["path"]), world)[0]}
            if isinstance(plugin, dict) and plugin.get("type") == "local" and plugin.get("path")
            else plugin
            for plugin in options.plugins
        ]
    return changes


def claude_cli() -> str:
    """The path of the Claude Code CLI bundled in claude-agent-sdk (for CommandAgent(["claude", ...]) setups)."""
    return bundled()


def _checked_approval(approval: str) -> str:
    if approval not in APPROVALS:
        raise ConfigError(f"ClaudeAgent(approval={approval!r}): choose one of {', '.join(APPROVALS)}.")
    return approval


class ClaudeAgent:
    """Runs `options_factory(workspace) -> ClaudeAgentOptions` through a Claude Code CLI (`chosen_cli`)."""

    observes_control_plane = True  # its hooks and callbacks are wrapped: each tool call is seen as it happens
    save_points = False
    in_process = False
    sandbox_level = "configured"  # or what with_sandbox set: "off", "strict"
    permission_modes = PERMISSION_MODES  # every mode the CLI accepts (cli_facts)

    def __init__(
        self,
        options_factory: Callable[[Path], Any],
        *,
        timeout: float | None = None,
        approval: str = "deny",
        cli: str | os.PathLike[str] | None = None,
    ) -> None:
        """`timeout`: seconds per run, unless the test's @pytest.mark.agent(timeout=...) says otherwise.  `approval`:
        the answer at the CLI's approval prompt when the options have no can_use_tool — "deny" (nobody answers: the
        call is `asked`) or "allow" (a person says yes); `--agent-approval` sets it for a run.  `cli`: the Claude Code
        CLI to run — a version (2.1.300, or "latest": from the npm registry, installed into the user cache on first
        use), "bundled", "system" (`claude` on PATH) or a path; it wins over the options' `cli_path`, and
        `--agent-cli` (or the test's marker) wins over it."""
        self.approval = _checked_approval(approval)
        if cli is not None and not isinstance(cli, str | os.PathLike):
            raise ConfigError(f"ClaudeAgent(cli={cli!r}): give a version, latest, bundled, system or a path.")
        check_takes_workspace(options_factory, "ClaudeAgent", "ClaudeAgentOptions")
        if importlib.util.find_spec("claude_agent_sdk") is None:
            raise ConfigError(
                "ClaudeAgent needs claude-agent-sdk, which is not installed.",
                hint="pip install 'pytest-controlplane[claude]' (it bundles the Claude Code CLI).",
            )
        self.options_factory = options_factory
        self.timeout = timeout
        self.cli = os.fspath(cli) if cli is not None else None
        self.cli_chosen_by = "ClaudeAgent(cli=...)"

    @classmethod
    def project_settings(cls, *, sources: Sequence[str] = ("project", "local"), timeout: float | None = None) -> Any:
        """The agent of a repository whose control plane is its own `.claude/` settings (command hooks, permission
        rules): the CLI with nothing but those settings (`setting_sources`) and the workspace as its cwd."""

        def options(workspace: Path) -> Any:
            from claude_agent_sdk import ClaudeAgentOptions

            return ClaudeAgentOptions(setting_sources=list(sources))  # type: ignore[arg-type]

        options.__qualname__ = f"ClaudeAgent.project_settings(sources={list(sources)})"
        return cls(options, timeout=timeout)

    @staticmethod
    def session_id_for(name: str) -> str:
        """The CLI's session id for a session a test names (it takes UUIDs only): the same for the same name."""
        import uuid

        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pytest-controlplane:session:{name}"))

    def _with(self, **changes: Any) -> ClaudeAgent:
        """This agent with `changes` to its attributes; the others (timeout, approval, sandbox level, CLI) kept."""
        agent = copy.copy(self)
        vars(agent).update(changes)
        return agent

    def with_approval(self, approval: str) -> ClaudeAgent:
        """The same agent with another answer at the CLI's approval prompt ("deny" or "allow")."""
        return self._with(approval=_checked_approval(approval))

    def with_cli(self, cli: str, chosen_by: str) -> ClaudeAgent:
        """The same agent running another Claude Code CLI (see `__init__`), chosen by `chosen_by` (`--agent-cli`, the
        marker): it wins over the agent's own choice."""
        return self._with(cli=cli, cli_chosen_by=chosen_by)

    def chosen_cli(self, options: Any) -> Cli:
        """The CLI a run with `options` starts: the agent's `cli` (or the one --agent-cli or the marker chose), else
        the options' `cli_path`, else the default (the bundled CLI); its version is what it says it is."""
        if self.cli:
            return choose(self.cli, self.cli_chosen_by)
        if options.cli_path:
            return choose(str(options.cli_path), "ClaudeAgentOptions(cli_path=...)")
        return default()

    def with_permission_mode(self, mode: str) -> ClaudeAgent:
        """The same agent under another permission mode."""
        if mode not in self.permission_modes:
            raise ConfigError(f"Unknown permission mode {mode!r}; choose one of {', '.join(self.permission_modes)}.")

        def options(workspace: Path) -> Any:
            return dataclasses.replace(self.options_factory(workspace), permission_mode=mode)

        return self._with(options_factory=options)

    def with_sandbox(self, level: str) -> ClaudeAgent:
        """The same agent with its OS sandbox `level`: "configured" (as it is), "off", or "strict" (the documented
        hardening of what it is configured with: agents/sandbox.py `strict`)."""
        if level not in SANDBOX_LEVELS:
            raise ConfigError(f"Unknown sandbox level {level!r}; choose one of {', '.join(SANDBOX_LEVELS)}.")
        if level == "configured":
            return self

        def options(workspace: Path) -> Any:
            base = self.options_factory(workspace)
            if level == "off":
                return dataclasses.replace(base, sandbox={"enabled": False})
            found = configured(base, workspace, workspace.parent, "")
            return dataclasses.replace(base, sandbox=strict(found.settings))

        options.__qualname__ = f"{getattr(self.options_factory, '__qualname__', 'options')}[sandbox={level}]"
        return self._with(options_factory=options, sandbox_level=level)

    def options_for(
        self,
        world: World,
        base_url: str,
        observer: Observer,
        outcome: RunOutcome,
        session_id: str,
        resume: str | None,
        fork: bool,
    ) -> Any:
        from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

        options = self.options_factory(world.workspace)
        if not isinstance(options, ClaudeAgentOptions):
            raise ConfigError(
                f"ClaudeAgent's options_factory returned {type(options).__name__}, not ClaudeAgentOptions.",
                hint="Return ClaudeAgentOptions(...) from it: ClaudeAgent(lambda workspace: ClaudeAgentOptions(...)).",
            )
        # The user's env first, ours on top (it cannot point the agent elsewhere); the SDK merges this over
        # pytest's own environment, so whatever World.env withholds is blanked explicitly.
        outcome.sandbox = configured(options, world.workspace, world.root, world.env(base_url).get("PATH", ""))
        env = {**(options.env or {}), **world.env(base_url, short_tmp=outcome.sandbox.enabled)}
        env.update({k: "" for k in os.environ if k not in env})
        hooks = {
            event: [dataclasses.replace(m, hooks=[observer.wrap_hook(event, h) for h in m.hooks]) for m in matchers]
            for event, matchers in (options.hooks or {}).items()
        }
        hooks.setdefault("PreToolUse", []).append(HookMatcher(matcher=None, hooks=[observer.pre_tool_use]))
        hooks.setdefault("PostToolUse", []).append(HookMatcher(matcher=None, hooks=[observer.post_tool_use]))
        hooks.setdefault("PostToolUseFailure", []).append(HookMatcher(matcher=None, hooks=[observer.post_tool_failure]))
        user_stderr = options.stderr

        def stderr(line: str) -> None:
            outcome.stderr.append(line)
            if user_stderr is not None:
                user_stderr(line)

        changes: dict[str, Any] = dict(cwd=str(world.workspace), env=env, hooks=hooks, stderr=stderr)
        # Every question the CLI would put to a person comes to the observer on the permission protocol: so `asked` is
        # read from the question, not from the words of a refusal.  A can_use_tool makes the CLI offer the tools that
        # need someone to answer; an agent without one never offers them, and its requests stay as recorded.
        # (A permission prompt tool of the user's own answers instead: the SDK takes one or the other.)
        if not options.permission_prompt_tool_name:
            changes["can_use_tool"] = observer.permission(options.can_use_tool, self.approval)
        if options.can_use_tool is None and not options.permission_prompt_tool_name:
            changes["disallowed_tools"] = list(dict.fromkeys([*options.disallowed_tools, *PROMPT_ONLY_TOOLS]))
        changes.update(_recorded_settings(options, world))
        outcome.cli = self.chosen_cli(options)
        env.update(_chosen_by_header(env, outcome.cli))
        # Inside the world's network when it has one (agents/networked.py), through a launcher.
        running = world.network.running is not None
        changes["cli_path"] = launcher(world, outcome.cli.path) if running else outcome.cli.path
        if resume:
            changes.update(resume=resume, fork_session=fork, session_id=None)
        else:
            changes.update(session_id=session_id, resume=None, fork_session=False)
        return dataclasses.replace(options, **changes)

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
        checkpoint: Checkpoint | None = None,
    ) -> RunOutcome:
        from claude_agent_sdk import query

        outcome = RunOutcome()
        observer = Observer(checkpoint)
        options = self.options_for(world, base_url, observer, outcome, session_id, resume, fork)
        calls: dict[str, ToolCall] = {}

        async def consume() -> None:
            async for message in query(prompt=prompt, options=options):
                collect(message, outcome, calls)

        failure: BaseException | None = None
        try:
            with quiet_about_our_callback():
                asyncio.run(asyncio.wait_for(consume(), timeout))
        except Exception as error:  # noqa: BLE001 - described below, raised by the session
            failure = error
        finally:
            world.release_short_tmp()  # the CLI is gone: nothing is left in /tmp
        return self.settled(outcome, observer, calls, failure, timeout)

    def settled(
        self,
        outcome: RunOutcome,
        observer: Observer,
        calls: dict[str, ToolCall],
        failure: BaseException | None,
        timeout: float,
    ) -> RunOutcome:
        """The run's outcome: each call's verdict from what the observer saw, and the failure, described."""
        denials = getattr(outcome.result, "permission_denials", None) or []
        observer.refused = {d.get("tool_use_id", "") for d in denials if isinstance(d, dict)}
        for call in calls.values():
            observer.settle(call)
        outcome.tool_calls = list(calls.values())
        mark(outcome.tool_calls, outcome.sandbox)
        outcome.callback_errors = observer.errors
        if failure is not None:
            outcome.error = self._describe_failure(failure, outcome, timeout)
        return outcome

    @staticmethod
    def _describe_failure(error: BaseException, outcome: RunOutcome, timeout: float) -> BaseException:
        """The SDK's exception as an AgentError that says what happened and what to do."""
        from claude_agent_sdk import CLIConnectionError, CLINotFoundError, ProcessError

        if isinstance(error, AgentError):
            return error
        pending = [c for c in outcome.tool_calls if c.verdict == "not_run"]
        during = f" during {pending[-1].name} {json.dumps(pending[-1].input)[:200]}" if pending else ""
        tail = stderr_tail(outcome.stderr)
        if isinstance(error, TimeoutError):
            return AgentError(
                f"The Claude agent did not finish within {timeout:g} s{during}; it was stopped.\nstderr tail:\n{tail}",
                stderr=outcome.stderr,
                hint="A hook or can_use_tool that waits forever, or a tool that hangs, is the usual "
                "cause; raise the limit with @pytest.mark.agent(timeout=...) or the ini option "
                "agent_timeout if the run is just long.",
            )
        if isinstance(error, CLINotFoundError):
            return AgentError(
                f"The Claude Code CLI was not found: {str(error).splitlines()[0]}",
                hint="Install pytest-controlplane[claude] (claude-agent-sdk bundles the CLI), or point "
                "ClaudeAgentOptions(cli_path=...) at an existing `claude` executable.",
            )
        exit_code = getattr(error, "exit_code", None)
        if exit_code is None and isinstance(
            error, CLIConnectionError
        ):  # "Cannot write to terminated process (exit code: 3)"
            found = re.search(r"exit code:? (-?\d+)", str(error))
            exit_code = int(found.group(1)) if found else None
        if isinstance(error, ProcessError | CLIConnectionError):
            # Which of the two the SDK raises, and whether it knows the exit code, is a race.
            how = describe_exit(exit_code) if exit_code is not None else "stopped unexpectedly"
            lost = "" if exit_code is not None else f" (the SDK says {type(error).__name__}: {str(error).strip()})"
            said = outcome.last_words()
            return AgentError(
                f"The Claude Code CLI {how}{during}{lost}.\n"
                + (f"Its last words before it ended: {said!r}\n" if said else "")
                + f"stderr tail:\n{tail}",
                stderr=outcome.stderr,
                hint=f"The CLI ended the run itself, right after its last words: {said}"
                if said and not outcome.stderr
                else "The stderr tail says why. A CLI that cannot start usually means a broken "
                "install (reinstall claude-agent-sdk) or an unusable cli_path; a signal means "
                "something killed it — a tool command, or the machine running out of memory.",
            )
        return AgentError(
            f"The Claude agent failed: {type(error).__name__}: {error}\nstderr tail:\n{tail}",
            stderr=outcome.stderr,
            hint="The error and the stderr tail say why; an error raised by your options_factory or a callback is "
            "your code's, anything else the CLI's (run the test with -s to see all of its stderr).",
        )

    @staticmethod
    def transcript(world: World, session_id: str) -> Path:
        """Where the CLI keeps the session: <config>/projects/<slug of the cwd>/<session>.jsonl."""
        from ..gateway.templating import slug

        return world.config_dir / "projects" / slug(os.path.realpath(world.workspace)) / f"{session_id}.jsonl"

    @classmethod
    def history(cls, world: World, session_id: str) -> list[dict[str, Any]]:
        from ..history import read_transcript

        return read_transcript(cls.transcript(world, session_id))
