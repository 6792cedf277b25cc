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

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .agents.save_points import SaveHook
from .errors import ConfigError, ControlPlaneError, ControlPlaneFailure, SessionCorrupt, ours
from .gateway.server import DropRequest
from .history.check import Problem, lost_entries
from .history.stored import JSONL, Stored, read_stored, stored_messages

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
    resumed: str = "resumed"  # or "started over" (nothing was saved), "resume failed"
    history: Any = None  # what was stored after the resume: transcript lines or messages
    before_cut: Stored | None = None  # a process agent's store as it was before the save that was cut off

    @property
    def consistent(self) -> bool:
        return not [p for p in self.after if p.severity == "error"]

    def __str__(self) -> str:
        before = "; ".join(map(str, self.before)) or "consistent"
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
            raise HistoryInconsistent(
                f"{len(self.inconsistent)} crash point(s) did not resume to one consistent history.\n{self}"
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


def crash(session: Any, prompt: str, at: Any, resume: str | None) -> CrashResult:
    """Run `prompt` in `session` (continuing `resume`), crash at `at`, and check what is stored right after."""
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
    session: Any, prompt: str, script: Sequence[Any], then: str, before: Sequence[str], idempotent: Sequence[str]
) -> CrashReport:
    """See AgentSession.crash_everywhere."""
    with session.isolated() as clean:
        clean.gateway.use_script(endless(script))
        session_id = prepare(clean, before)
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


def prepare(session: Any, prompts: Sequence[str]) -> str | None:
    """Run `prompts` as one session (the first a new one); return its id (None when there were none)."""
    for index, prompt in enumerate(prompts):
        session.turn(prompt, resume=session.world.session_id if index else None)
    return session.world.session_id if prompts else None


def crash_and_resume(
    parent: Any,
    point: CrashPoint,
    prompt: str,
    script: Sequence[Any],
    then: str,
    prepared: Sequence[str],
    idempotent: Sequence[str],
) -> CrashResult:
    with parent.isolated() as session:
        session.gateway.use_script(endless(script))
        continued = prepare(session, prepared)
        session_id = session.world.session_id
        stored_first = stored_history(session.agent, session.world, session_id)
        result = crash(session, prompt, point, continued)
        at_crash = stored_history(session.agent, session.world, session_id)
        # What the resume must keep: the store at the crash, else (torn or gone) the last whole one before it.
        known = next((s for s in (at_crash, result.before_cut, stored_first) if s is not None and not s.torn), None)
        crashed_run, requests_before = len(session.runs), len(session.gateway.exchanges)
        try:
            if at_crash is None and known is None:
                result.resumed = "started over (nothing was stored)"
                session.run(then)
            else:
                session.resume(then, session=session_id)
        except ControlPlaneError as error:
            result.resumed = "resume failed"
            result.after.append(Problem("resume-failed", None, _why(error)))
            return result
        after = stored_history(session.agent, session.world, session_id)
        result.history = after.content if after is not None else None
        result.after.extend(after.check() if after is not None else [])
        result.after.extend(lost(known, after, intact=known is at_crash))
        first = next(
            (e for e in session.gateway.exchanges[requests_before:] if e.request.route == "/v1/messages"), None
        )
        if first is not None and known is not None:
            missing = [i for i in tool_use_ids(known) if i.encode() not in first.request.body]
            if missing:
                result.after.append(
                    Problem(
                        "model-missed-history",
                        None,
                        f"the first request after the resume lacks stored tool calls {missing}",
                    )
                )
        result.after.extend(done_twice(session, crashed_run, set(idempotent)))
        return result


def _why(error: ControlPlaneError) -> str:
    """The first line of a failed resume's error, and the last line the agent wrote on stderr (its own reason)."""
    first = str(error).splitlines()[0]
    stderr = getattr(error, "stderr", [])
    return f"{first} ({stderr[-1].strip()})" if stderr else first


def stored_history(agent: Any, world: Any, session_id: str) -> Stored | None:
    """What the agent has stored for `session_id` (None: nothing, or the agent keeps no store we know of)."""
    reader = getattr(agent, "stored", None)
    try:
        return reader(world, session_id) if callable(reader) else read_stored(agent.transcript(world, session_id))
    except ConfigError:
        return None  # the agent keeps no store we know of


def lost(known: Stored | None, after: Stored | None, *, intact: bool = True) -> list[Problem]:
    """What was stored before the crash (`known`) and is missing after the resume.  `intact`: the store survived
    the crash as it was; else it was torn or gone, and a resume without `known` started over (lost-history)."""
    if known is None or known.content is None or not known.content or (after is not None and after.torn):
        return []
    if after is None:
        return [
            Problem(
                "lost-history",
                None,
                f"nothing is stored after the resume; the store held {_count(known)} before the crash",
            )
        ]
    assert after.content is not None  # a torn store (content None) returned above
    if known.kind == JSONL and after.kind == JSONL:
        dropped = lost_entries(known.content, after.content or [])
        if intact or not dropped:
            return dropped
    elif after.content[: len(known.content)] == known.content:
        return []
    elif intact:
        return [
            Problem(
                "lost-entry",
                None,
                "the messages stored before the crash are not the start of the history after the resume",
            )
        ]
    return [
        Problem(
            "lost-history",
            None,
            f"the resume started over: the store held {_count(known)} before the save "
            "that was cut off, and none of it is in the history after it",
        )
    ]


def _count(stored: Stored) -> str:
    n = len(stored.content or [])
    return f"{n} {'transcript line' if stored.kind == JSONL else 'message'}{'' if n == 1 else 's'}"


def tool_use_ids(stored: Stored | None) -> list[str]:
    messages = stored_messages(stored) if stored is not None else []
    return [
        str(b.get("id"))
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


def done_twice(session: Any, crashed_run: int, idempotent: set[str]) -> list[Problem]:
    """Tool calls (same tool, same input) whose effects happened both before the crash and after the resume."""

    def effects_by_call(run: int) -> dict[tuple[str, str], list[str]]:
        found: dict[tuple[str, str], list[str]] = {}
        for change in session.effects.diff:
            if change.run == run:
                for call in change.calls:
                    key = (call.name, json.dumps(call.input, sort_keys=True))
                    found.setdefault(key, []).append(change.shown_as)
        return found

    before = effects_by_call(crashed_run)
    after: dict[tuple[str, str], list[str]] = {}
    for run in range(crashed_run + 1, len(session.runs) + 1):
        after.update(effects_by_call(run))
    return [
        Problem(
            "effect-twice",
            None,
            f"{name} {tool_input[:80]} changed {', '.join(sorted(set(paths)))} before "
            "the crash and again after the resume",
        )
        for (name, tool_input), paths in before.items()
        if (name, tool_input) in after and name not in idempotent
    ]
