"""Crash injection: stop an agent at a chosen point, resume it, and judge the history it ends with.

Crash points, counted within one run (1-based):
- request N — when the agent's Nth model request reaches the gateway, before it is answered
- stream N  — halfway through streaming the Nth answer
- tool N    — inside the Nth tool call, while its PreToolUse hooks run (ClaudeAgent), or as the
              tool starts (LoopAgent)
- save N    — inside the Nth session save: for LoopAgent's session store after the new file is written and
              before it replaces the old one; for a Python process agent (CommandAgent) part-way through its Nth
              write to the store's directory (see agents/save_points.py)

A process agent is SIGKILLed (its whole world: the CLI, its tools); an in-process agent gets its
connection cut (request, stream) or a `SimulatedCrash` raised at the point (tool, save), a
BaseException that no `except Exception` swallows.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .agents.save_points import SaveHook
from .errors import ConfigError, ControlPlaneError, ControlPlaneFailure, SessionCorrupt, ours
from .gateway.server import DropRequest
from .history.check import Problem, fixes
from .history.stored import Stored, read_stored
from .recovery import resume_and_judge, stored_history

__tracebackhide__ = ours  # our errors show without our frames

KINDS = ("request", "stream", "tool", "save")


class SimulatedCrash(BaseException):
    """Raised inside an in-process agent where a crash test stops it."""


class HistoryInconsistent(ControlPlaneFailure):
    """A session history (or a crash-and-resume) failed the consistency checks."""


@dataclass(frozen=True)
class CrashPoint:
    kind: str
    number: int

    @classmethod
    def parse(cls, value: Any) -> CrashPoint:
        if isinstance(value, CrashPoint):
            return value
        kind, _, number = str(value).replace(":", " ").partition(" ")
        if kind not in KINDS or not number.strip().isdigit() or int(number) < 1:
            raise ConfigError(
                f"Unknown crash point {value!r}; write 'request N', 'stream N', 'tool N' or 'save N' "
                "(N counts from 1 within the run)."
            )
        return cls(kind, int(number))

    def __str__(self) -> str:
        return f"{self.kind} {self.number}"


class Crasher:
    """Counts the points of one run and fires at the armed one (or only counts, with `point=None`)."""

    def __init__(self, session: Any, point: CrashPoint | None) -> None:
        self.session = session
        self.point = point
        self.seen: Counter[str] = Counter()
        self.fired = False
        self.hook: SaveHook | None = None

    def arm(self) -> dict[str, Any]:
        """What the agent's run is given: an in-process agent this crasher, a Python process agent a save hook."""
        agent, world = self.session.agent, self.session.world
        if getattr(agent, "in_process", False):
            return {"crash": self}
        if not getattr(agent, "save_points", False):
            return {}
        try:
            store = agent.transcript(world, world.session_id).parent
        except ControlPlaneError:
            return {}  # no store known: no save points
        armed = self.point.number if self.point is not None and self.point.kind == "save" else None
        self.hook = SaveHook(store.resolve(), world.root / "save-points" / "saves.jsonl", armed)
        return {"save_hook": self.hook}

    def ran(self) -> None:
        """After a run: count the saves a process agent made (the armed one, if reached, was cut)."""
        if self.hook is not None:
            for _ in self.hook.saves():
                self._reached("save")

    def _reached(self, kind: str) -> bool:
        self.seen[kind] += 1
        hit = self.point is not None and not self.fired and self.point == CrashPoint(kind, self.seen[kind])
        if hit:
            self.fired = True
        return hit

    def on_request(self, request: Any) -> None:
        if self._reached("request"):
            self.session.kill_agent()
            raise DropRequest(str(self.point))
        if self._reached("stream"):
            self.session.gateway.interruptions[request.index] = self.session.kill_agent

    def on_tool(self, in_process: bool, settle: Callable[[], None] | None = None) -> None:
        """`settle`: called before the kill, to wait until the agent has recorded the call."""
        if self._reached("tool"):
            if settle is not None:
                settle()
            self.session.kill_agent()
            if in_process:
                raise SimulatedCrash(str(self.point))

    def on_save(self) -> None:
        if self._reached("save"):
            raise SimulatedCrash(str(self.point))

    def points(self) -> list[CrashPoint]:
        """Every point this (counting) run passed, in order of kind."""
        return [CrashPoint(kind, n) for kind in KINDS for n in range(1, self.seen[kind] + 1)]


@dataclass
class CrashResult:
    """One crash point: what the history looked like after the crash, and after the resume."""

    point: CrashPoint
    before: list[Problem] = field(default_factory=list)  # right after the crash (an unpaired tool_use is expected)
    after: list[Problem] = field(default_factory=list)  # after the resume: must be empty
    resumed: str = ""  # "resumed", "started over (nothing was stored)", "resume failed"; "": no resume ran
    history: Any = None  # what was stored after the resume: transcript lines or messages
    before_cut: Stored | None = None  # a process agent's store as it was before the save that was cut off

    @property
    def consistent(self) -> bool:
        """True only when a resume ran and the history after it is whole (a crash alone proves nothing yet)."""
        return self.resumed not in ("", "resume failed") and not [p for p in self.after if p.severity == "error"]

    @property
    def reason(self) -> str:
        """Why it is not consistent ("" when it is)."""
        if not self.resumed:
            return (
                "no resume ran after the crash, so nothing says the agent recovers: pass then=... to "
                "crash() (it resumes and judges), or resume and call assert_consistent()"
            )
        return "; ".join(str(p) for p in self.after if p.severity == "error")

    def __str__(self) -> str:
        before = "; ".join(map(str, self.before)) or "consistent"
        if not self.resumed:
            return f"{str(self.point):<10} after the crash: {before}\n{'':<10} not resumed: {self.reason}"
        after = "; ".join(map(str, self.after)) or "consistent"
        return f"{str(self.point):<10} after the crash: {before}\n{'':<10} {self.resumed}: {after}"


@dataclass
class CrashReport:
    """Every crash point of a run, each crashed, resumed and checked."""

    results: list[CrashResult]

    @property
    def inconsistent(self) -> list[CrashResult]:
        return [r for r in self.results if not r.consistent]

    def __str__(self) -> str:
        lines = [
            f"{len(self.results)} crash point(s), {len(self.results) - len(self.inconsistent)} consistent after resume:"
        ]
        lines.extend(str(result) for result in self.results)
        return "\n".join(lines)

    def assert_consistent(self) -> None:
        __tracebackhide__ = True
        if self.inconsistent:
            found = [p for r in self.inconsistent for p in r.after + r.before]
            raise HistoryInconsistent(
                f"{len(self.inconsistent)} crash point(s) did not resume to one consistent history.\n{self}"
                + (f"\nHow to fix:{fixes(found)}" if fixes(found) else "")
            )


def wait_until_recorded(world: Any, tool_use_id: str, seconds: float = 10.0) -> None:
    """A crash inside a tool's hooks comes after the Claude Code CLI has recorded the call: it appends the tool_use
    line to its transcript on its own time (measured: at times not yet, on a loaded machine), so wait for the line."""
    needle, deadline = tool_use_id.encode(), time.monotonic() + seconds
    projects = world.config_dir / "projects"
    while not any(needle in path.read_bytes() for path in projects.rglob("*.jsonl")):
        if time.monotonic() > deadline:
            return  # killed all the same: the report shows what was stored
        time.sleep(0.01)


# --- crashing a session, and resuming it -------------------------------------------------------------


def crash(
    session: Any, prompt: str, at: Any, resume: str | None, then: str | None = None, idempotent: Sequence[str] = ()
) -> CrashResult:
    """Run `prompt` in `session` (continuing `resume`), crash at `at`, and check what is stored right after; with
    `then`, resume with it and judge the history as crash_everywhere does (one judgement: resume_and_judge)."""
    session_id = resume or session.world.session_id
    stored_first = stored_history(session.agent, session.world, session_id)
    result = _crash(session, prompt, at, resume)
    if then is not None:
        resume_and_judge(session, result, session_id, stored_first, then, idempotent)
    return result


def _crash(session: Any, prompt: str, at: Any, resume: str | None) -> CrashResult:
    point = CrashPoint.parse(at)
    session.crasher = crasher = Crasher(session, point)
    failure: ControlPlaneError | None = None
    try:
        session.turn(prompt, resume=resume)
    except ControlPlaneError as error:
        failure = error  # the crash we caused, if it fired
    finally:
        session.crasher = None
        session.gateway.interruptions.clear()
    session.gateway.cut_short = crasher.fired  # what the script holds for the rest of the run is never asked for
    if not crasher.fired:
        if failure is not None:
            raise failure  # the run failed on its own before the point: that is what to fix
        counts = ", ".join(f"{n} {kind}(s)" for kind, n in crasher.seen.items())
        raise ConfigError(
            f"The run never reached crash point {point}: it passed {counts}.",
            hint="Pick a point the run reaches (crash_everywhere lists them all).",
        )
    last_run = session.runs[-1].session_id if session.runs else None
    stored = stored_history(session.agent, session.world, resume or last_run or session.world.session_id)
    kept = crasher.hook.before_cut() if crasher.hook is not None else None
    try:
        before_cut = read_stored(kept) if kept is not None else None
    except SessionCorrupt:
        before_cut = None  # a shape only the agent's history= reader knows: the store before the run stands in
    return CrashResult(point, before=stored.check() if stored else [], before_cut=before_cut)


def crash_everywhere(
    session: Any, prompt: str, script: Sequence[Any], then: str, before: Sequence[Any], idempotent: Sequence[str]
) -> CrashReport:
    """See AgentSession.crash_everywhere."""
    with session.isolated() as clean:
        session_id = prepare(clean, before, script)
        clean.crasher = counter = Crasher(clean, None)
        try:
            clean.turn(prompt, resume=session_id)
        finally:
            clean.crasher = None
    report = CrashReport(
        [crash_and_resume(session, point, prompt, script, then, before, idempotent) for point in counter.points()]
    )
    session.crash_reports.append(report)
    return report


def endless(turns: Sequence[Any]) -> Any:
    """The turns in order, then "Done." for as long as the agent asks (a crashed and resumed run may ask more)."""
    from .gateway.scripted import ScriptedModel

    return ScriptedModel(list(turns), then="Done.")


def prepare(session: Any, prompts: Sequence[Any], script: Sequence[Any]) -> str | None:
    """Run `prompts` as one session (the first a new one), each answered by its own turns: "Done." for a prompt
    alone, the turns given with it as `(prompt, turns)`.  Then `script` answers what follows.  Return the session's
    id (None when there were no prompts)."""
    for index, entry in enumerate(prompts):
        prompt, turns = (entry, []) if isinstance(entry, str) else entry
        session.gateway.use_script(endless(turns))
        session.turn(prompt, resume=session.world.session_id if index else None)
    session.gateway.use_script(endless(script))
    return session.world.session_id if prompts else None


def crash_and_resume(
    parent: Any,
    point: CrashPoint,
    prompt: str,
    script: Sequence[Any],
    then: str,
    prepared: Sequence[Any],
    idempotent: Sequence[str],
) -> CrashResult:
    with parent.isolated() as session:
        continued = prepare(session, prepared, script)
        session_id = session.world.session_id
        stored_first = stored_history(session.agent, session.world, session_id)
        result = _crash(session, prompt, point, continued)
        return resume_and_judge(session, result, session_id, stored_first, then, idempotent)


class Crashes:
    """An agent session's crash tests and history checks (AgentSession inherits them)."""

    agent: Any
    world: Any
    runs: list[Any]
    gateway: Any
    effects: Any

    def _last_session(self) -> str:
        raise NotImplementedError

    def _session(self, session: str | None) -> str:
        raise NotImplementedError  # AgentSession's: a session name or id resolved to the agent's id

    def crash(
        self,
        prompt: str,
        *,
        at: Any,
        session: str | None = None,
        then: str | None = None,
        idempotent: Sequence[str] = (),
    ) -> CrashResult:
        """Run `prompt` (continuing `session` if given) and crash at `at` ("request 2", "stream 1", "tool 3", "save 1");
        `.before` holds the stored history's problems right after the crash.  With `then`, resume with it and judge
        the history as crash_everywhere does; without, `.consistent` is False: nothing has shown a recovery yet."""
        return crash(self, prompt, at, self._session(session) if session is not None else None, then, idempotent)

    def crash_everywhere(
        self,
        prompt: str,
        *,
        script: Sequence[Any],
        then: str = "Continue where you left off.",
        before: Sequence[Any] = (),
        idempotent: Sequence[str] = (),
    ) -> CrashReport:
        """Crash a run of `prompt` at every point it passes, each in a fresh copy of this world, resume with `then`,
        and check: one consistent history, nothing stored before the crash lost, the model shown the stored history,
        no tool effect done twice (tools named in `idempotent` may repeat).  The model answers from `script` (its
        turns in order, then "Done."); prompts in `before` run first in each world, so the crashed run continues a
        session that already has a history: each is answered "Done.", or by its own turns given as `(prompt, turns)`;
        they never use up `script`."""
        return crash_everywhere(self, prompt, script, then, before, idempotent)

    def history_problems(self, session: str | None = None) -> list[Any]:
        """Consistency problems of a stored session (the last one by default)."""
        stored = stored_history(self.agent, self.world, self._session(session))
        return stored.check() if stored is not None else []

    def assert_consistent(self, session: str | None = None) -> None:
        """Fail if the stored session (the last by default) is not one consistent history."""
        __tracebackhide__ = True
        problems = self.history_problems(session)
        if [p for p in problems if p.severity == "error"]:
            raise HistoryInconsistent(
                "The session history is inconsistent:\n"
                + "\n".join(f"  {p}" for p in problems)
                + (f"\nHow to fix:{fixes(problems)}" if fixes(problems) else "")
            )
