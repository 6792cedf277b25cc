"""CommandAgent: any agent process that honours ANTHROPIC_BASE_URL — another language, a CLI, a script.

It runs with the workspace as its cwd, the world's hermetic environment, the prompt on stdin, in
a process group of its own.  We cannot watch its control plane from inside, so its tool calls are
read off what the model saw (tool_use out, tool_result back) and its effects off the filesystem.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import AgentError, ConfigError, SessionCorrupt, ours
from ..history import read_transcript
from ..history.stored import MESSAGES, Stored, read_stored, torn
from .networked import wrap
from .outcome import RunOutcome
from .process import describe_exit, kill_group, stderr_tail
from .save_points import SaveHook
from .world import World

__tracebackhide__ = ours  # our errors show without our frames

Argv = Sequence[str] | Callable[..., Sequence[str]]


def _failure(command: list[str], status: int, stderr: list[str], timed_out_after: float | None) -> AgentError | None:
    """What went wrong with the agent process, if anything: it ran out of time, or exited with an error."""
    name = Path(command[0]).name
    if timed_out_after is not None:
        return AgentError(
            f"The agent process {name} did not finish within {timed_out_after:g} s; its process group was killed.\n"
            f"stderr tail:\n{stderr_tail(stderr)}",
            stderr=stderr,
            hint="A tool that hangs, or an agent waiting for more input (stdin is closed after the prompt), is "
            "the usual cause; raise the limit with @pytest.mark.agent(timeout=...) or the ini option "
            "agent_timeout if the run is just long.",
        )
    if status != 0:
        return AgentError(
            f"The agent process {name} {describe_exit(status)}.\nstderr tail:\n{stderr_tail(stderr)}",
            stderr=stderr,
            hint="The stderr tail says why. The command was: " + " ".join(command),
        )
    return None


class CommandAgent:
    """`CommandAgent(["my-agent", "--flag"])`, or a function of the session for resume/fork.

    `argv` is a list of strings, or `argv(session_id=..., resume=..., fork=...) -> list[str]`, called once per run:

    - a new session (`run`):  session_id = the new session (the name a test gave it: `run(p, session="asha-case")`,
      else a UUID), resume = None, fork = False;
    - `resume(p, session=S)`: session_id = a new id the run may ignore, resume = S (the name or id), fork = False;
    - `fork(p, session=S, name=N)`: session_id = the new session (N, if named), resume = S, the parent, fork = True.

    The prompt is written to stdin, which is then closed; an agent that reads prompts until a word of its own
    (a REPL's `quit`) gets it after the prompt with `stdin_end="quit\n"`.  `env` adds variables beneath the
    hermetic ones.  `transcript(world, session_id) -> Path` says where the agent keeps a session, if it
    does: Claude Code JSONL, JSONL of messages, a JSON messages list, or a JSON object with a "messages" list
    (detected).  For any other store, `history(world, session_id) -> messages list (None: nothing stored)`
    reads it.  A Python agent's writes in the transcript's directory are its save points in crash tests.
    """

    observes_control_plane = False  # tool calls are read off the model's exchanges instead
    save_points = True  # a crash test may cut its saves (agents/save_points.py)
    in_process = False

    def __init__(
        self,
        argv: Argv,
        *,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        transcript: Callable[[World, str], Path] | None = None,
        history: Callable[[World, str], list[Any] | None] | None = None,
        stdin_end: str = "",
    ) -> None:
        if callable(argv):
            self.argv: Argv = argv
        elif isinstance(argv, str | bytes) or not argv or not all(isinstance(a, str | os.PathLike) for a in argv):
            raise ConfigError(
                f'CommandAgent(argv) takes a non-empty list of strings, like ["my-agent", "-p"], or a '
                f"function (session_id, resume, fork) -> list; got {argv!r}."
            )
        else:
            self.argv = [os.fspath(a) for a in argv]
        self.env = dict(env or {})
        self.timeout = timeout
        self._transcript = transcript
        if history is not None and not callable(history):
            raise ConfigError(
                f"CommandAgent(history=...) takes a function (world, session_id) -> messages list; got {history!r}."
            )
        self._history = history
        self.stdin_end = stdin_end

    def _command(self, session_id: str, resume: str | None, fork: bool) -> list[str]:
        if callable(self.argv):
            command = [os.fspath(a) for a in self.argv(session_id=session_id, resume=resume, fork=fork)]
            if not command:
                raise ConfigError(
                    "CommandAgent's argv function returned an empty command.",
                    hint='Return the program and its arguments, e.g. ["my-agent", "--resume", resume].',
                )
            return command
        if resume is not None:
            raise ConfigError(
                f"CommandAgent({self.argv!r}) cannot {'fork' if fork else 'resume'} a session: a fixed "
                "command does not know which one.",
                hint="Pass argv as a function, e.g. lambda session_id, resume, fork: ['my-agent'] + "
                "(['--resume', resume] if resume else ['--session-id', session_id]).",
            )
        return list(self.argv)

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
        save_hook: SaveHook | None = None,
    ) -> RunOutcome:
        command = wrap(world, self._command(session_id, resume, fork))  # in the world's network, if it has one
        outcome = RunOutcome(session_id=session_id if resume is None or fork else resume)
        env = {**self.env, **world.env(base_url)}
        if save_hook is not None:
            env.update(save_hook.env(self.env.get("PYTHONPATH")))
        try:
            process = subprocess.Popen(
                command,
                cwd=world.workspace,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            outcome.error = AgentError(
                f"CommandAgent could not start {command[0]!r}: {error.strerror or error}.",
                hint="Give argv[0] as an absolute path or a program on PATH, executable, with "
                "a valid interpreter line if it is a script.",
            )
            return outcome
        timed_out = False
        try:
            given = prompt + ("\n" if self.stdin_end and not prompt.endswith("\n") else "") + self.stdin_end
            stdout, stderr = process.communicate(given.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(process.pid)
            stdout, stderr = process.communicate()
        finally:
            kill_group(process.pid)  # whatever it left running in its group goes with it
        outcome.stdout = stdout.decode(errors="replace")
        outcome.stderr = stderr.decode(errors="replace").splitlines()
        outcome.result = outcome.stdout.strip()
        outcome.error = _failure(command, process.returncode, outcome.stderr, timeout if timed_out else None)
        return outcome

    def transcript(self, world: World, session_id: str) -> Path:
        if self._transcript is None:
            raise ConfigError(
                "This CommandAgent keeps no transcript that pytest-controlplane knows of.",
                hint="Pass CommandAgent(..., transcript=lambda world, session_id: <the file of the "
                "session>), or history=lambda world, session_id: <its messages list>.",
            )
        return self._transcript(world, session_id)

    def stored(self, world: World, session_id: str) -> Stored | None:
        """The stored session, read by `history=` if given, else from the transcript file (None: nothing stored)."""
        if self._history is None:
            return read_stored(self.transcript(world, session_id))
        path = self._transcript(world, session_id) if self._transcript is not None else None
        try:
            messages = self._history(world, session_id)
        except Exception as error:  # the user's reader on a torn store: the history check says so
            size = path.stat().st_size if path is not None and path.is_file() else 0
            return torn(path, size, f"history(world, {session_id!r}) raised {type(error).__name__}: {error}")
        return None if messages is None else Stored(MESSAGES, list(messages), path)

    def history(self, world: World, session_id: str) -> list[dict[str, Any]]:
        stored = self.stored(world, session_id)
        if stored is not None and stored.torn:
            raise SessionCorrupt(
                stored.problems[0].message,
                path=stored.path,
                hint="A save was cut off; an atomic save (temp file, fsync, rename) never leaves this.",
            )
        if stored is not None and stored.kind == MESSAGES:
            return stored.content or []
        if stored is None and self._history is not None:
            raise SessionCorrupt(
                f"history(world, {session_id!r}) returned None: no session {session_id} is stored.",
                hint="Did the run reach the model and save, and is this the session id it used?",
            )
        return read_transcript(self.transcript(world, session_id))  # Claude Code JSONL (or: no file there)

    def __repr__(self) -> str:
        return f"CommandAgent({self.argv!r})"
